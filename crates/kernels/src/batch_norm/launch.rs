//! Host side of the fused batch norm: shape checks, output allocation and kernel launches on
//! Burn's CubeCL tensor primitive ([`CubeTensor`]).

use burn::cubecl::CubeDim;
use burn::cubecl::server::CubeCountSelection;
use burn::tensor::{DType, Shape};
use burn_cubecl::CubeRuntime;
use burn_cubecl::ops::numeric::zeros_client;
use burn_cubecl::ops::reshape;
use burn_cubecl::tensor::CubeTensor;

use super::counters;
use super::kernel::{
    channel_grads_kernel, channel_stats_kernel, channel_sums_kernel, input_grad_kernel,
    normalize_kernel,
};
use crate::cube_util::{elementwise_grid, empty_like, reduction_cube_size, reduction_splits};

/// `[N, C, ...]` → `[N, C, S]` with `S` the product of the trailing sizes (1 for a rank-2
/// input): a relabelling where the storage allows it, a copy otherwise.
fn as_channels<R: CubeRuntime>(tensor: CubeTensor<R>) -> CubeTensor<R> {
    let dims = tensor.meta.shape().as_slice().to_vec();
    assert!(
        dims.len() >= 2,
        "batch_norm: the input must be [N, C, ...], got shape {dims:?}"
    );
    let spatial: usize = dims[2..].iter().product();
    reshape(tensor, Shape::new([dims[0], dims[1], spatial]))
}

fn assert_channel_vector<R: CubeRuntime>(
    name: &str,
    tensor: &CubeTensor<R>,
    channels: usize,
    dtype: DType,
) {
    assert_eq!(
        tensor.meta.shape().as_slice(),
        &[channels],
        "batch_norm: {name} must have shape [C] = [{channels}]"
    );
    assert_eq!(
        tensor.dtype, dtype,
        "batch_norm: {name} must have the input's dtype"
    );
}

/// Runs the per-channel partial sums of `x` (and `grad_out`, `y` in the backward): `[C · splits
/// · 2]` f32, and the number of runs per channel.
fn channel_partial_sums<R: CubeRuntime>(
    x: &CubeTensor<R>,
    grad_out: &CubeTensor<R>,
    y: &CubeTensor<R>,
    mean: &CubeTensor<R>,
    backward: bool,
    relu: bool,
) -> (CubeTensor<R>, usize) {
    let dims = x.meta.shape().as_slice();
    let (channels, count) = (dims[1], dims[0] * dims[2]);
    let block = reduction_cube_size(x, count);
    let splits = reduction_splits(count, block);
    let chunk = count.div_ceil(splits);
    let runs = channels * splits;
    let partials = empty_like(x, Shape::new([runs * 2]), DType::F32);
    let client = x.client.clone();
    channel_sums_kernel::launch::<R>(
        &client,
        CubeCountSelection::new(&client, runs as u32).cube_count(),
        CubeDim::new_1d(block),
        x.clone().into_tensor_arg(),
        grad_out.clone().into_tensor_arg(),
        y.clone().into_tensor_arg(),
        mean.clone().into_tensor_arg(),
        partials.clone().into_tensor_arg(),
        chunk,
        splits,
        backward,
        relu,
        block,
        x.dtype.into(),
    );
    (partials, splits)
}

/// Fused batch-norm forward in training mode: statistics over every axis but the channel axis
/// (1), then `y = (x − mean) / sqrt(var + eps) · gamma + beta`, and `max(y, 0)` when `relu`.
///
/// - `x`: `[N, C, ...]` (rank ≥ 2), any strides, any float dtype the device supports (f32,
///   f16, bf16);
/// - `gamma`, `beta`: `[C]`, the dtype of `x` (panics otherwise);
/// - returns `(y, mean, rstd)`: `y` with the shape and dtype of `x`, contiguous; `mean` and
///   `rstd = 1 / sqrt(var + eps)` as f32 `[C]`, with the biased variance (divide by
///   `N · Π spatial`), as `burn::nn::BatchNorm` and `torch.nn.BatchNorm2d` normalise (the
///   running variance, which PyTorch keeps unbiased, is the caller's).
///
/// Three launches: per-channel partial sums over runs of the channel's elements (f32, shifted
/// by the channel's first element so that the variance does not lose digits to
/// cancellation), the statistics from them, and the normalisation. Panics when a channel has
/// no elements.
pub fn batch_norm_forward_cube<R: CubeRuntime>(
    x: CubeTensor<R>,
    gamma: CubeTensor<R>,
    beta: CubeTensor<R>,
    eps: f64,
    relu: bool,
) -> (CubeTensor<R>, CubeTensor<R>, CubeTensor<R>) {
    let shape = x.meta.shape().clone();
    let x = as_channels(x);
    let dims = x.meta.shape().as_slice().to_vec();
    let (channels, count) = (dims[1], dims[0] * dims[2]);
    let dtype = x.dtype;
    assert_channel_vector("gamma", &gamma, channels, dtype);
    assert_channel_vector("beta", &beta, channels, dtype);
    let stat = || empty_like(&x, Shape::new([channels]), DType::F32);
    let (mean, rstd) = (stat(), stat());
    let y = empty_like(&x, Shape::from(dims.clone()), dtype);
    if channels == 0 || dims[0] == 0 {
        return (reshape(y, shape), mean, rstd);
    }
    assert!(
        count > 0,
        "batch_norm: a channel has no elements ({shape:?})"
    );

    let (partials, splits) = channel_partial_sums(&x, &x, &x, &mean, false, false);
    let client = x.client.clone();
    let (cubes, dim) = elementwise_grid(&mean, channels);
    channel_stats_kernel::launch::<R>(
        &client,
        cubes,
        dim,
        x.clone().into_tensor_arg(),
        partials.into_tensor_arg(),
        mean.clone().into_tensor_arg(),
        rstd.clone().into_tensor_arg(),
        splits,
        eps as f32,
        dtype.into(),
    );
    let (cubes, dim) = elementwise_grid(&y, y.meta.num_elements());
    normalize_kernel::launch::<R>(
        &client,
        cubes,
        dim,
        x.into_tensor_arg(),
        mean.clone().into_tensor_arg(),
        rstd.clone().into_tensor_arg(),
        gamma.into_tensor_arg(),
        beta.into_tensor_arg(),
        y.clone().into_tensor_arg(),
        relu,
        dtype.into(),
    );
    counters::FORWARD_LAUNCHES.bump();
    (reshape(y, shape), mean, rstd)
}

/// Fused batch-norm backward in training mode, from the forward's statistics.
///
/// - `x`, `grad_out`: `[N, C, ...]`, same shape and dtype, any strides;
/// - `gamma`: `[C]`, the dtype of `x`;
/// - `mean`, `rstd`: f32 `[C]`, as returned by [`batch_norm_forward_cube`] for this `x`;
/// - `relu_output`: the forward's output `y` when it fused a ReLU (the gradient is zero where
///   `y ≤ 0`), else `None`;
/// - returns `(dx, dgamma, dbeta)`: `dx` shaped like `x` (contiguous), `dgamma` and `dbeta`
///   `[C]`, all in the dtype of `x`: `dbeta = Σ dy`, `dgamma = Σ dy · x̂` and
///   `dx = gamma · rstd · (dy − dbeta / n − x̂ · dgamma / n)`, `x̂ = (x − mean) · rstd`,
///   `n = N · Π spatial`; every sum is accumulated in f32.
///
/// Three launches: per-channel partial sums of `dy` and `dy · (x − mean)`, the parameter
/// gradients from them, and the input gradient.
pub fn batch_norm_backward_cube<R: CubeRuntime>(
    x: CubeTensor<R>,
    gamma: CubeTensor<R>,
    grad_out: CubeTensor<R>,
    mean: CubeTensor<R>,
    rstd: CubeTensor<R>,
    relu_output: Option<CubeTensor<R>>,
) -> (CubeTensor<R>, CubeTensor<R>, CubeTensor<R>) {
    let shape = x.meta.shape().clone();
    assert_eq!(
        grad_out.meta.shape(),
        &shape,
        "batch_norm: grad_out must have the input's shape"
    );
    let x = as_channels(x);
    let grad_out = as_channels(grad_out);
    let relu = relu_output.is_some();
    let y = relu_output.map_or_else(|| x.clone(), as_channels);
    assert_eq!(
        y.meta.shape(),
        x.meta.shape(),
        "batch_norm: relu_output must have the input's shape"
    );
    let dims = x.meta.shape().as_slice().to_vec();
    let channels = dims[1];
    let dtype = x.dtype;
    assert_channel_vector("gamma", &gamma, channels, dtype);
    for (name, tensor) in [("grad_out", &grad_out), ("relu_output", &y)] {
        assert_eq!(
            tensor.dtype, dtype,
            "batch_norm: {name} must have the dtype of x"
        );
    }
    for (name, stat) in [("mean", &mean), ("rstd", &rstd)] {
        assert_eq!(
            (stat.meta.shape().as_slice(), stat.dtype),
            (&[channels][..], DType::F32),
            "batch_norm: {name} must be f32 [C] = [{channels}]"
        );
    }
    let dx = empty_like(&x, Shape::from(dims.clone()), dtype);
    if channels == 0 || dims[0] * dims[2] == 0 {
        // No elements: the parameter gradients are sums over nothing.
        let zeros = || {
            zeros_client(
                x.client.clone(),
                x.device.clone(),
                Shape::new([channels]),
                dtype,
            )
        };
        return (reshape(dx, shape), zeros(), zeros());
    }
    let param_grad = || empty_like(&x, Shape::new([channels]), dtype);
    let (dgamma, dbeta) = (param_grad(), param_grad());

    let (partials, splits) = channel_partial_sums(&x, &grad_out, &y, &mean, true, relu);
    let sums = empty_like(&x, Shape::new([channels * 2]), DType::F32);
    let client = x.client.clone();
    let (cubes, dim) = elementwise_grid(&rstd, channels);
    channel_grads_kernel::launch::<R>(
        &client,
        cubes,
        dim,
        partials.into_tensor_arg(),
        rstd.clone().into_tensor_arg(),
        dgamma.clone().into_tensor_arg(),
        dbeta.clone().into_tensor_arg(),
        sums.clone().into_tensor_arg(),
        splits,
        dtype.into(),
    );
    let (cubes, dim) = elementwise_grid(&dx, dx.meta.num_elements());
    input_grad_kernel::launch::<R>(
        &client,
        cubes,
        dim,
        x.into_tensor_arg(),
        grad_out.into_tensor_arg(),
        y.into_tensor_arg(),
        mean.into_tensor_arg(),
        rstd.into_tensor_arg(),
        gamma.into_tensor_arg(),
        sums.into_tensor_arg(),
        dx.clone().into_tensor_arg(),
        relu,
        dtype.into(),
    );
    counters::BACKWARD_LAUNCHES.bump();
    (reshape(dx, shape), dgamma, dbeta)
}
