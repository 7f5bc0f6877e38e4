//! Host side of the fused GELUs: shape checks, output allocation, vector-size choice and kernel
//! launches on Burn's CubeCL tensor primitive ([`CubeTensor`]).
//!
//! Every launcher makes its inputs contiguous first (a strided view is copied once; a
//! contiguous one is used as is), computes in f32 and returns outputs in the input's dtype.
//! An empty input launches nothing (and bumps no counter).

use burn::cubecl::{CubeCount, CubeDim, calculate_cube_count_elemwise};
use burn::tensor::{DType, Shape};
use burn_cubecl::CubeRuntime;
use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::ops::numeric::zeros_client;
use burn_cubecl::ops::reshape;
use burn_cubecl::tensor::CubeTensor;

use super::bias_kernel::{bias_gelu_backward_partial_kernel, column_sum_final_kernel};
use super::counters;
use super::kernel::{
    bias_gelu_forward_kernel, gelu_backward_kernel, gelu_forward_kernel,
    quick_gelu_backward_kernel, quick_gelu_forward_kernel,
};
use crate::cube_util::{contiguous_as, elementwise_grid, empty_like, rows_and_width, vector_size};

/// Upper bound on the row blocks of the dbias partial sums, which bounds both the
/// `[blocks, width]` f32 scratch and the serial loop of the final kernel.
const MAX_ROW_BLOCKS: usize = 256;
/// Fewest rows a block sums, so that small batches do not spread over many near-empty blocks.
const MIN_ROWS_PER_BLOCK: usize = 16;
/// Most units per cube of the column kernels (one column vector each).
const MAX_COLUMN_CUBE: usize = 256;
/// Fewest units per cube of the column kernels: one warp/wavefront-sized group, so that narrow
/// widths do not launch mostly idle 256-unit cubes.
const MIN_COLUMN_CUBE: usize = 32;

fn assert_same<R: CubeRuntime>(op: &str, name: &str, tensor: &CubeTensor<R>, x: &CubeTensor<R>) {
    assert_eq!(
        tensor.meta.shape(),
        x.meta.shape(),
        "{op}: {name} must have the shape of x"
    );
    assert_eq!(
        tensor.dtype, x.dtype,
        "{op}: {name} must have the dtype of x"
    );
}

fn assert_bias<R: CubeRuntime>(bias: &CubeTensor<R>, width: usize, dtype: DType) {
    assert_eq!(
        bias.meta.shape().as_slice(),
        &[width],
        "bias_gelu: bias must have shape [width] = [{width}]"
    );
    assert_eq!(
        bias.dtype, dtype,
        "bias_gelu: bias must have the input's dtype"
    );
}

/// Which element-wise kernel [`elementwise`] launches.
#[derive(Clone, Copy)]
enum Elementwise {
    QuickForward,
    QuickBackward,
    GeluForward,
    GeluBackward,
}

/// Runs an element-wise kernel on `x` (and `dy` for the backward kernels), any shape, and
/// returns the output shaped like `x`. Returns whether anything was launched.
fn elementwise<R: CubeRuntime>(
    kind: Elementwise,
    x: CubeTensor<R>,
    dy: Option<CubeTensor<R>>,
) -> (CubeTensor<R>, bool) {
    let shape = x.meta.shape().clone();
    let dtype = x.dtype;
    let len = shape.num_elements();
    let flat = Shape::new([len]);
    let x = contiguous_as(x, flat.clone());
    let out = empty_like(&x, flat.clone(), dtype);
    if len == 0 {
        return (reshape(out, shape), false);
    }
    let n = vector_size(&x);
    let (count, dim) = elementwise_grid(&x, len / n);
    let client = x.client.clone();
    let (x, y) = (x.into_tensor_arg(), out.clone().into_tensor_arg());
    let dy = || contiguous_as(dy.expect("backward kernels take dy"), flat).into_tensor_arg();
    match kind {
        Elementwise::QuickForward => {
            quick_gelu_forward_kernel::launch::<R>(&client, count, dim, n, x, y, dtype.into())
        }
        Elementwise::GeluForward => {
            gelu_forward_kernel::launch::<R>(&client, count, dim, n, x, y, dtype.into())
        }
        Elementwise::QuickBackward => quick_gelu_backward_kernel::launch::<R>(
            &client,
            count,
            dim,
            n,
            x,
            dy(),
            y,
            dtype.into(),
        ),
        Elementwise::GeluBackward => {
            gelu_backward_kernel::launch::<R>(&client, count, dim, n, x, dy(), y, dtype.into())
        }
    }
    (reshape(out, shape), true)
}

/// Fused QuickGELU forward, `y = x · sigmoid(1.702 x)`.
///
/// `x`: any shape, any float dtype the device supports (f32, f16, bf16) → `y` of the same shape
/// and dtype, computed in f32.
pub fn quick_gelu_forward_cube<R: CubeRuntime>(x: CubeTensor<R>) -> CubeTensor<R> {
    let (y, launched) = elementwise(Elementwise::QuickForward, x, None);
    if launched {
        counters::QUICK_GELU_FORWARD.bump();
    }
    y
}

/// Fused QuickGELU backward, `dx = dy · (s + 1.702 x s (1 − s))`, `s = sigmoid(1.702 x)`.
///
/// `x`, `grad_out`: same shape and dtype (panics otherwise) → `dx` of that shape and dtype,
/// computed in f32.
pub fn quick_gelu_backward_cube<R: CubeRuntime>(
    x: CubeTensor<R>,
    grad_out: CubeTensor<R>,
) -> CubeTensor<R> {
    assert_same("quick_gelu", "grad_out", &grad_out, &x);
    let (dx, launched) = elementwise(Elementwise::QuickBackward, x, Some(grad_out));
    if launched {
        counters::QUICK_GELU_BACKWARD.bump();
    }
    dx
}

/// Fused bias + exact GELU forward, `y = gelu(x + bias)`, bias broadcast over the last
/// dimension; `bias: None` is plain GELU.
///
/// - `x`: `[..., width]`, any float dtype the device supports (f32, f16, bf16);
/// - `bias`: `[width]`, dtype of `x` (panics otherwise);
/// - returns `y` with the shape and dtype of `x`, computed in f32.
pub fn bias_gelu_forward_cube<R: CubeRuntime>(
    x: CubeTensor<R>,
    bias: Option<CubeTensor<R>>,
) -> CubeTensor<R> {
    let Some(bias) = bias else {
        let (y, launched) = elementwise(Elementwise::GeluForward, x, None);
        if launched {
            counters::BIAS_GELU_FORWARD.bump();
        }
        return y;
    };
    let shape = x.meta.shape().clone();
    let (rows, width) = rows_and_width("bias_gelu", &shape);
    let dtype = x.dtype;
    assert_bias(&bias, width, dtype);

    let x = contiguous_as(x, Shape::new([rows, width]));
    let y = empty_like(&x, Shape::new([rows, width]), dtype);
    if rows * width == 0 {
        return reshape(y, shape);
    }
    let bias = into_contiguous(bias);
    let n = vector_size(&x);
    let (count, dim) = elementwise_grid(&x, rows * width / n);
    bias_gelu_forward_kernel::launch::<R>(
        &x.client.clone(),
        count,
        dim,
        n,
        x.into_tensor_arg(),
        bias.into_tensor_arg(),
        y.clone().into_tensor_arg(),
        dtype.into(),
    );
    counters::BIAS_GELU_FORWARD.bump();
    reshape(y, shape)
}

/// Fused bias + exact GELU backward from `(x, bias, grad_out)`.
///
/// - `x`, `grad_out`: `[..., width]`, same shape and dtype (panics otherwise);
/// - `bias`: `[width]` in the dtype of `x`, or `None` for plain GELU;
/// - returns `(dx, dbias)`: `dx = grad_out · gelu'(x + bias)` shaped like `x`;
///   `dbias = Σ dx` over every leading dimension, `[width]`, present iff `bias` is; both in the
///   dtype of `x`, computed and summed in f32.
///
/// With a bias this is two kernels: one pass over `x` and `grad_out` writing `dx` and f32
/// partial column sums per block of rows, then a sum over the blocks (deterministic, no
/// atomics). Without one it is a single element-wise kernel. An empty batch gives an empty `dx`
/// and a zero `dbias`.
pub fn bias_gelu_backward_cube<R: CubeRuntime>(
    x: CubeTensor<R>,
    bias: Option<CubeTensor<R>>,
    grad_out: CubeTensor<R>,
) -> (CubeTensor<R>, Option<CubeTensor<R>>) {
    assert_same("bias_gelu", "grad_out", &grad_out, &x);
    let Some(bias) = bias else {
        let (dx, launched) = elementwise(Elementwise::GeluBackward, x, Some(grad_out));
        if launched {
            counters::BIAS_GELU_BACKWARD.bump();
        }
        return (dx, None);
    };
    let shape = x.meta.shape().clone();
    let (rows, width) = rows_and_width("bias_gelu", &shape);
    let dtype = x.dtype;
    assert_bias(&bias, width, dtype);

    let as_rows = Shape::new([rows, width]);
    let x = contiguous_as(x, as_rows.clone());
    let grad_out = contiguous_as(grad_out, as_rows.clone());
    let dx = empty_like(&x, as_rows, dtype);
    if rows * width == 0 {
        let zeros = zeros_client(
            x.client.clone(),
            x.device.clone(),
            Shape::new([width]),
            dtype,
        );
        return (reshape(dx, shape), Some(zeros));
    }
    let bias = into_contiguous(bias);
    let dbias = empty_like(&x, Shape::new([width]), dtype);

    let n = vector_size(&x);
    let width_vecs = width / n;
    let rows_per_block = rows.div_ceil(MAX_ROW_BLOCKS).max(MIN_ROWS_PER_BLOCK);
    let blocks = rows.div_ceil(rows_per_block);
    let dbias_part = empty_like(&x, Shape::new([blocks, width]), DType::F32);

    let client = x.client.clone();
    let column_cube = width_vecs
        .next_power_of_two()
        .clamp(MIN_COLUMN_CUBE, MAX_COLUMN_CUBE) as u32;
    bias_gelu_backward_partial_kernel::launch::<R>(
        &client,
        CubeCount::new_2d(
            width_vecs.div_ceil(column_cube as usize) as u32,
            blocks as u32,
        ),
        CubeDim::new_1d(column_cube),
        n,
        x.into_tensor_arg(),
        bias.into_tensor_arg(),
        grad_out.into_tensor_arg(),
        dx.clone().into_tensor_arg(),
        dbias_part.clone().into_tensor_arg(),
        rows_per_block,
        dtype.into(),
    );

    let final_dim = CubeDim::new_1d(column_cube);
    column_sum_final_kernel::launch::<R>(
        &client,
        calculate_cube_count_elemwise(&client, width_vecs, final_dim),
        final_dim,
        n,
        dbias_part.into_tensor_arg(),
        dbias.clone().into_tensor_arg(),
        dtype.into(),
    );
    counters::BIAS_GELU_BACKWARD.bump();

    (reshape(dx, shape), Some(dbias))
}
