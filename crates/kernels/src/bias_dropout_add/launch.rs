//! Host side of the fused bias + dropout + residual add: shape checks, output allocation and
//! kernel launches on Burn's CubeCL tensor primitive ([`CubeTensor`]).
//!
//! The dropout seed is a device tensor (`[2]`, an int dtype, see `seed.rs`) bound as a kernel
//! input: the launchers never read it, so a seed drawn on the device stays there.

use burn::cubecl::{CubeCount, CubeDim, calculate_cube_count_elemwise};
use burn::tensor::{DType, Shape};
use burn_cubecl::CubeRuntime;
use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::ops::numeric::{empty_device_contiguous_dtype, zeros_client};
use burn_cubecl::ops::reshape;
use burn_cubecl::tensor::CubeTensor;

use super::counters;
use super::kernel::{
    bias_dropout_add_backward_columns_kernel, bias_dropout_add_backward_dbias_kernel,
    bias_dropout_add_backward_dx_kernel, bias_dropout_add_forward_kernel,
};
use super::mask::{check_mask_len, check_probability, dropout_scale, dropout_threshold};
use super::seed::SEED_WORDS;
use crate::cube_util::{contiguous_as, rows_and_width};

/// Units per cube of the element-wise kernels.
const ELEMENT_CUBE: u32 = 256;
/// Units per cube of the column kernels (one column each).
const COLUMN_CUBE: u32 = 256;
/// Upper bound on the row blocks of the dbias partial sums, which bounds both the
/// `[blocks, width]` scratch and the serial loop of the final kernel.
const MAX_ROW_BLOCKS: usize = 256;
/// Fewest rows a block sums, so that small batches do not spread over many near-empty blocks.
const MIN_ROWS_PER_BLOCK: usize = 16;

/// The mask parameters of the kernels: `(threshold, scale)`, the scale rounded from f64.
fn mask_args(p: f64) -> (u32, f32) {
    (dropout_threshold(p), dropout_scale(p) as f32)
}

/// The seed argument of the kernels: `seed` checked (`[2]`, an integer dtype) and made
/// contiguous; without one (allowed only at `p = 0`, where the kernels never read it) a
/// 1-element i32 placeholder, allocated but never written nor read.
fn seed_arg<R: CubeRuntime>(
    seed: Option<CubeTensor<R>>,
    p: f64,
    client: &burn_cubecl::cubecl::client::ComputeClient<R>,
    device: &R::Device,
) -> CubeTensor<R> {
    let Some(seed) = seed else {
        assert!(
            p == 0.0,
            "bias_dropout_add: dropout with p = {p} needs a seed tensor"
        );
        return empty_device_contiguous_dtype(
            client.clone(),
            device.clone(),
            Shape::new([1]),
            DType::I32,
        );
    };
    assert_eq!(
        seed.meta.shape().as_slice(),
        &[SEED_WORDS],
        "bias_dropout_add: the dropout seed must have shape [{SEED_WORDS}]"
    );
    assert!(
        matches!(
            seed.dtype,
            DType::I32 | DType::I64 | DType::U32 | DType::U64
        ),
        "bias_dropout_add: the dropout seed must be a 32- or 64-bit integer tensor, got {:?}",
        seed.dtype
    );
    into_contiguous(seed)
}

/// Fused forward: `y = residual + dropout(x + bias, p)`, inverted dropout with the mask of
/// `seed` (see `mask.rs`), a device tensor `[2]` of the backend's int dtype that the kernel
/// reads (`None` only at `p = 0`; panics otherwise).
///
/// - `x`, `residual`: `[..., width]`, same shape and dtype (f32, f16, bf16, as the device
///   supports); panics otherwise;
/// - `bias`: `[width]` in the dtype of `x`, or `None`;
/// - `0 ≤ p < 1`; at `p = 0` the kernel is the inference form `residual + x + bias`, with no
///   hashing;
/// - returns `y` with the shape and dtype of `x`, computed in f32.
///
/// Strided inputs are made contiguous first. One kernel launch; none for an empty tensor.
pub fn bias_dropout_add_forward_cube<R: CubeRuntime>(
    x: CubeTensor<R>,
    bias: Option<CubeTensor<R>>,
    residual: CubeTensor<R>,
    p: f64,
    seed: Option<CubeTensor<R>>,
) -> CubeTensor<R> {
    check_probability(p);
    let shape = x.meta.shape().clone();
    let (rows, width) = rows_and_width("bias_dropout_add", &shape);
    let dtype = x.dtype;
    assert_eq!(
        residual.meta.shape(),
        &shape,
        "bias_dropout_add: residual must have the shape of x"
    );
    assert_eq!(
        residual.dtype, dtype,
        "bias_dropout_add: residual must have the dtype of x"
    );
    if let Some(bias) = &bias {
        assert_eq!(
            bias.meta.shape().as_slice(),
            &[width],
            "bias_dropout_add: bias must have shape [width] = [{width}]"
        );
        assert_eq!(
            bias.dtype, dtype,
            "bias_dropout_add: bias must have the dtype of x"
        );
    }
    let num_elements = rows * width;
    check_mask_len(num_elements);

    let x = contiguous_as(x, Shape::new([rows, width]));
    let residual = contiguous_as(residual, Shape::new([rows, width]));
    let (client, device) = (x.client.clone(), x.device.clone());
    let seed = seed_arg(seed, p, &client, &device);
    let y = empty_device_contiguous_dtype(client.clone(), device, Shape::new([rows, width]), dtype);
    if num_elements == 0 {
        return reshape(y, shape);
    }

    let has_bias = bias.is_some();
    // Without a bias the kernel never reads its bias argument; `x` stands in (read-only).
    let bias = bias.map_or_else(|| x.clone(), into_contiguous);
    let (threshold, scale) = mask_args(p);
    let seed_dtype = seed.dtype;
    let cube_dim = CubeDim::new_1d(ELEMENT_CUBE);
    bias_dropout_add_forward_kernel::launch::<R>(
        &client,
        calculate_cube_count_elemwise(&client, num_elements, cube_dim),
        cube_dim,
        x.into_tensor_arg(),
        bias.into_tensor_arg(),
        residual.into_tensor_arg(),
        y.clone().into_tensor_arg(),
        seed.into_tensor_arg(),
        threshold,
        scale,
        has_bias,
        p > 0.0,
        [dtype.into(), seed_dtype.into()],
    );
    counters::FORWARD_LAUNCHES.bump();

    reshape(y, shape)
}

/// Fused backward of [`bias_dropout_add_forward_cube`] with the same `p` and `seed` (the same
/// seed tensor, or one holding the same values), from the upstream gradient
/// `grad_out: [..., width]`:
///
/// - `dx = grad_out · mask / (1 − p)`, shaped like `grad_out`, the mask regenerated from the
///   seed (nothing was saved by the forward);
/// - `dbias = Σ_rows dx` (`[width]`), only when `with_bias`;
/// - `d_residual` is `grad_out` itself and is not computed here.
///
/// Outputs are in the dtype of `grad_out`, computed in f32 (dbias summed in f32). Without a
/// bias, one element-wise launch (none at `p = 0`, where `dx` is `grad_out` itself). With a
/// bias, one pass over `grad_out` writes `dx` and f32 partial column sums over blocks of rows,
/// and a small kernel sums the blocks: deterministic, and free of float atomics (absent on
/// many devices).
pub fn bias_dropout_add_backward_cube<R: CubeRuntime>(
    grad_out: CubeTensor<R>,
    p: f64,
    seed: Option<CubeTensor<R>>,
    with_bias: bool,
) -> (CubeTensor<R>, Option<CubeTensor<R>>) {
    check_probability(p);
    let shape = grad_out.meta.shape().clone();
    let (rows, width) = rows_and_width("bias_dropout_add", &shape);
    let dtype = grad_out.dtype;
    let num_elements = rows * width;
    check_mask_len(num_elements);
    let dropout = p > 0.0;

    let grad_out = contiguous_as(grad_out, Shape::new([rows, width]));
    let (client, device) = (grad_out.client.clone(), grad_out.device.clone());
    let alloc = |shape: Shape, dtype: DType| {
        empty_device_contiguous_dtype(client.clone(), device.clone(), shape, dtype)
    };
    if !with_bias && !dropout {
        return (reshape(grad_out, shape), None);
    }
    let seed = seed_arg(seed, p, &client, &device);
    let seed_dtype = seed.dtype;

    if !with_bias {
        let dx = alloc(Shape::new([rows, width]), dtype);
        if num_elements > 0 {
            let (threshold, scale) = mask_args(p);
            let cube_dim = CubeDim::new_1d(ELEMENT_CUBE);
            bias_dropout_add_backward_dx_kernel::launch::<R>(
                &client,
                calculate_cube_count_elemwise(&client, num_elements, cube_dim),
                cube_dim,
                grad_out.into_tensor_arg(),
                dx.clone().into_tensor_arg(),
                seed.into_tensor_arg(),
                threshold,
                scale,
                [dtype.into(), seed_dtype.into()],
            );
            counters::BACKWARD_LAUNCHES.bump();
        }
        return (reshape(dx, shape), None);
    }

    if num_elements == 0 {
        // Nothing to differentiate: empty dx, zero dbias (or an empty one), no launch.
        let dbias = zeros_client(client.clone(), device.clone(), Shape::new([width]), dtype);
        return (reshape(grad_out, shape), Some(dbias));
    }

    // At p = 0, dx is dy itself: the column pass only sums, and its dx argument is a 1-element
    // placeholder, never written (a real tensor must be bound, and binding `grad_out` there
    // would alias a buffer the kernel reads).
    let dx = if dropout {
        alloc(Shape::new([rows, width]), dtype)
    } else {
        alloc(Shape::new([1]), dtype)
    };
    let dbias = alloc(Shape::new([width]), dtype);
    let rows_per_block = rows.div_ceil(MAX_ROW_BLOCKS).max(MIN_ROWS_PER_BLOCK);
    let blocks = rows.div_ceil(rows_per_block);
    let dbias_part = alloc(Shape::new([blocks, width]), DType::F32);

    let (threshold, scale) = mask_args(p);
    bias_dropout_add_backward_columns_kernel::launch::<R>(
        &client,
        CubeCount::new_2d(width.div_ceil(COLUMN_CUBE as usize) as u32, blocks as u32),
        CubeDim::new_1d(COLUMN_CUBE),
        grad_out.clone().into_tensor_arg(),
        dx.clone().into_tensor_arg(),
        dbias_part.clone().into_tensor_arg(),
        rows_per_block,
        seed.into_tensor_arg(),
        threshold,
        scale,
        dropout,
        dropout,
        [dtype.into(), seed_dtype.into()],
    );

    let final_dim = CubeDim::new_1d(COLUMN_CUBE);
    bias_dropout_add_backward_dbias_kernel::launch::<R>(
        &client,
        calculate_cube_count_elemwise(&client, width, final_dim),
        final_dim,
        dbias_part.into_tensor_arg(),
        dbias.clone().into_tensor_arg(),
        dtype.into(),
    );
    counters::BACKWARD_LAUNCHES.bump();

    let dx = if dropout { dx } else { grad_out };
    (reshape(dx, shape), Some(dbias))
}
