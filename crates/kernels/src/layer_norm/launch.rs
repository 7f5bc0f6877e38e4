//! Host side of the fused LayerNorm: shape checks, output allocation and kernel launches on
//! Burn's CubeCL tensor primitive ([`CubeTensor`]).

use burn::cubecl::server::CubeCountSelection;
use burn::cubecl::{CubeCount, CubeDim, calculate_cube_count_elemwise};
use burn::tensor::{DType, Shape};
use burn_cubecl::CubeRuntime;
use burn_cubecl::ops::numeric::{empty_device_contiguous_dtype, zeros_client};
use burn_cubecl::ops::reshape;
use burn_cubecl::tensor::CubeTensor;

use super::counters;
use super::kernel::{
    layer_norm_backward_dx_kernel, layer_norm_backward_params_final_kernel,
    layer_norm_backward_params_partial_kernel, layer_norm_forward_kernel,
};
use crate::cube_util::{contiguous_as, power_of_two_cube, rows_and_width};

/// Largest cube of the row kernels. 256 units keep a 768..4096-wide row at a few elements per
/// unit, and fit every device's limit.
const MAX_ROW_CUBE: u32 = 256;
/// Units per cube of the column kernels (one column each).
const COLUMN_CUBE: u32 = 256;
/// Upper bound on the row blocks of the dgamma/dbeta partial sums, which bounds both the
/// `[blocks, width]` scratch and the serial loop of the final kernel.
const MAX_ROW_BLOCKS: usize = 256;
/// Fewest rows a block sums, so that small batches do not spread over many near-empty blocks.
const MIN_ROWS_PER_BLOCK: usize = 16;

/// The row kernels' cube size: a power of two (their tree reduction halves it down to one)
/// within the device's limit.
fn row_cube_size<R: CubeRuntime>(tensor: &CubeTensor<R>) -> u32 {
    power_of_two_cube(tensor, MAX_ROW_CUBE)
}

fn assert_vector<R: CubeRuntime>(name: &str, tensor: &CubeTensor<R>, width: usize, dtype: DType) {
    assert_eq!(
        tensor.meta.shape().as_slice(),
        &[width],
        "layer_norm: {name} must have shape [width] = [{width}]"
    );
    assert_eq!(
        tensor.dtype, dtype,
        "layer_norm: {name} must have the input's dtype"
    );
}

/// Fused LayerNorm forward over the last dimension.
///
/// - `x`: `[..., width]`, any float dtype the device supports (f32, f16, bf16);
/// - `gamma`, `beta`: `[width]`, same dtype as `x` (panics otherwise);
/// - returns `(y, mean, rstd)`: `y` with the shape and dtype of `x`; `mean` and
///   `rstd = 1 / sqrt(var + eps)` as f32 `[rows]`, `rows` being the product of the leading
///   dimensions of `x` (the statistics the backward needs).
///
/// Statistics are accumulated in f32 whatever the storage dtype. Strided inputs are made
/// contiguous first. Panics when `width == 0`.
pub fn layer_norm_forward_cube<R: CubeRuntime>(
    x: CubeTensor<R>,
    gamma: CubeTensor<R>,
    beta: CubeTensor<R>,
    eps: f64,
) -> (CubeTensor<R>, CubeTensor<R>, CubeTensor<R>) {
    let shape = x.meta.shape().clone();
    let (rows, width) = rows_and_width("layer_norm", &shape);
    assert!(width > 0, "layer_norm: the normalized dimension is empty");
    let dtype = x.dtype;
    assert_vector("gamma", &gamma, width, dtype);
    assert_vector("beta", &beta, width, dtype);

    let x = contiguous_as(x, Shape::new([rows, width]));
    let (client, device) = (x.client.clone(), x.device.clone());
    let y = empty_device_contiguous_dtype(
        client.clone(),
        device.clone(),
        Shape::new([rows, width]),
        dtype,
    );
    let stat = || {
        empty_device_contiguous_dtype(
            client.clone(),
            device.clone(),
            Shape::new([rows]),
            DType::F32,
        )
    };
    let (mean, rstd) = (stat(), stat());

    if rows > 0 {
        let block = row_cube_size(&x);
        layer_norm_forward_kernel::launch::<R>(
            &client,
            CubeCountSelection::new(&client, rows as u32).cube_count(),
            CubeDim::new_1d(block),
            x.into_tensor_arg(),
            gamma.into_tensor_arg(),
            beta.into_tensor_arg(),
            y.clone().into_tensor_arg(),
            mean.clone().into_tensor_arg(),
            rstd.clone().into_tensor_arg(),
            eps as f32,
            block,
            dtype.into(),
        );
        counters::FORWARD_LAUNCHES.bump();
    }

    (reshape(y, shape), mean, rstd)
}

/// Fused LayerNorm backward over the last dimension.
///
/// - `x`, `grad_out`: `[..., width]`, same shape and dtype;
/// - `gamma`: `[width]`, dtype of `x`;
/// - `mean`, `rstd`: f32 `[rows]`, as returned by [`layer_norm_forward_cube`] for this `x`;
/// - returns `(dx, dgamma, dbeta)`: `dx` shaped like `x`, `dgamma` and `dbeta` `[width]`, all in
///   the dtype of `x`; every sum is accumulated in f32.
///
/// `dx` takes one kernel (one cube per row). `dgamma = Σ_rows grad_out · x̂` and
/// `dbeta = Σ_rows grad_out` take two: f32 partial sums over blocks of rows, then a sum over the
/// blocks, which avoids float atomics (absent on many devices, and non-deterministic).
pub fn layer_norm_backward_cube<R: CubeRuntime>(
    x: CubeTensor<R>,
    gamma: CubeTensor<R>,
    grad_out: CubeTensor<R>,
    mean: CubeTensor<R>,
    rstd: CubeTensor<R>,
) -> (CubeTensor<R>, CubeTensor<R>, CubeTensor<R>) {
    let shape = x.meta.shape().clone();
    let (rows, width) = rows_and_width("layer_norm", &shape);
    assert!(width > 0, "layer_norm: the normalized dimension is empty");
    let dtype = x.dtype;
    assert_vector("gamma", &gamma, width, dtype);
    assert_eq!(
        grad_out.meta.shape(),
        &shape,
        "layer_norm: grad_out must have the shape of x"
    );
    assert_eq!(
        grad_out.dtype, dtype,
        "layer_norm: grad_out must have the dtype of x"
    );
    assert_vector("mean", &mean, rows, DType::F32);
    assert_vector("rstd", &rstd, rows, DType::F32);

    let x = contiguous_as(x, Shape::new([rows, width]));
    let grad_out = contiguous_as(grad_out, Shape::new([rows, width]));
    let (client, device) = (x.client.clone(), x.device.clone());
    let alloc = |shape: Shape, dtype: DType| {
        empty_device_contiguous_dtype(client.clone(), device.clone(), shape, dtype)
    };
    let dx = alloc(Shape::new([rows, width]), dtype);
    if rows == 0 {
        // Nothing to differentiate: empty dx, zero parameter gradients, no launch.
        let zeros = || zeros_client(client.clone(), device.clone(), Shape::new([width]), dtype);
        return (reshape(dx, shape), zeros(), zeros());
    }
    let dgamma = alloc(Shape::new([width]), dtype);
    let dbeta = alloc(Shape::new([width]), dtype);

    let rows_per_block = rows.div_ceil(MAX_ROW_BLOCKS).max(MIN_ROWS_PER_BLOCK);
    let blocks = rows.div_ceil(rows_per_block);
    let dgamma_part = alloc(Shape::new([blocks, width]), DType::F32);
    let dbeta_part = alloc(Shape::new([blocks, width]), DType::F32);

    let block = row_cube_size(&x);
    layer_norm_backward_dx_kernel::launch::<R>(
        &client,
        CubeCountSelection::new(&client, rows as u32).cube_count(),
        CubeDim::new_1d(block),
        x.clone().into_tensor_arg(),
        gamma.into_tensor_arg(),
        grad_out.clone().into_tensor_arg(),
        mean.clone().into_tensor_arg(),
        rstd.clone().into_tensor_arg(),
        dx.clone().into_tensor_arg(),
        block,
        dtype.into(),
    );

    layer_norm_backward_params_partial_kernel::launch::<R>(
        &client,
        CubeCount::new_2d(width.div_ceil(COLUMN_CUBE as usize) as u32, blocks as u32),
        CubeDim::new_1d(COLUMN_CUBE),
        x.into_tensor_arg(),
        grad_out.into_tensor_arg(),
        mean.into_tensor_arg(),
        rstd.into_tensor_arg(),
        dgamma_part.clone().into_tensor_arg(),
        dbeta_part.clone().into_tensor_arg(),
        rows_per_block,
        dtype.into(),
    );

    let final_dim = CubeDim::new_1d(COLUMN_CUBE);
    layer_norm_backward_params_final_kernel::launch::<R>(
        &client,
        calculate_cube_count_elemwise(&client, width, final_dim),
        final_dim,
        dgamma_part.into_tensor_arg(),
        dbeta_part.into_tensor_arg(),
        dgamma.clone().into_tensor_arg(),
        dbeta.clone().into_tensor_arg(),
        dtype.into(),
    );
    counters::BACKWARD_LAUNCHES.bump();

    (reshape(dx, shape), dgamma, dbeta)
}
