//! Host side of the window-attention softmax: shape and dtype checks, output allocation and
//! kernel launches on Burn's CubeCL primitive ([`CubeTensor`]).
//!
//! Inputs are made contiguous first (a strided view is copied once). An empty input launches
//! nothing (and bumps no counter).

use burn::tensor::{DType, Shape};
use burn_cubecl::CubeRuntime;
use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::tensor::CubeTensor;

use super::counters;
use super::kernel::{window_softmax_backward_kernel, window_softmax_forward_kernel};
use crate::cube_util::{elementwise_grid, empty_like};

/// `[windows, heads, n, n]` of `scores`, checked.
fn score_dims<R: CubeRuntime>(scores: &CubeTensor<R>) -> [usize; 4] {
    let dims = scores.meta.shape().as_slice().to_vec();
    match dims[..] {
        [windows, heads, n, k] if n == k => [windows, heads, n, k],
        _ => panic!("window_softmax: scores must be [windows, heads, n, n], got {dims:?}"),
    }
}

fn assert_dtype<R: CubeRuntime>(name: &str, tensor: &CubeTensor<R>, dtype: DType) {
    assert_eq!(
        tensor.dtype, dtype,
        "window_softmax: {name} must have the dtype of the scores ({dtype:?})"
    );
}

/// Fused `softmax(scores + table[index] + mask)` over the last dimension.
///
/// - `scores`: `[windows, heads, n, n]`, any float dtype;
/// - `table`: `[offsets, heads]` in the dtype of `scores`; every `index` value must be below
///   `offsets` (not checked on the device: the index is a constant of the model);
/// - `index`: `[n · n]`, any integer dtype;
/// - `mask`: `[num_windows, n, n]` in the dtype of `scores`, `windows` a multiple of
///   `num_windows`, or `None`;
/// - returns the probabilities, shaped and typed like `scores`, computed in f32.
pub fn window_softmax_forward_cube<R: CubeRuntime>(
    scores: CubeTensor<R>,
    table: CubeTensor<R>,
    index: CubeTensor<R>,
    mask: Option<CubeTensor<R>>,
) -> CubeTensor<R> {
    let [windows, heads, n, _] = score_dims(&scores);
    let dtype = scores.dtype;
    assert_dtype("table", &table, dtype);
    assert_eq!(
        table.meta.shape()[1],
        heads,
        "window_softmax: the table must be [offsets, heads = {heads}]"
    );
    assert_eq!(
        index.meta.shape().as_slice(),
        &[n * n],
        "window_softmax: the index must be [n · n = {}]",
        n * n
    );
    let num_windows = match &mask {
        Some(mask) => {
            assert_dtype("mask", mask, dtype);
            let dims = mask.meta.shape().as_slice();
            assert!(
                dims.len() == 3 && dims[1..] == [n, n] && dims[0] > 0 && windows % dims[0] == 0,
                "window_softmax: the mask must be [num_windows, {n}, {n}] with num_windows \
                 dividing {windows}, got {dims:?}"
            );
            dims[0]
        }
        None => 1,
    };
    let scores = into_contiguous(scores);
    let probs = empty_like(&scores, scores.meta.shape().clone(), dtype);
    let rows = windows * heads * n;
    if rows == 0 {
        return probs;
    }
    let has_mask = mask.is_some();
    // Without a mask the kernel never reads it: a one-element placeholder.
    let mask = match mask {
        Some(mask) => into_contiguous(mask),
        None => empty_like(&scores, Shape::new([1]), dtype),
    };
    let index_dtype = index.dtype;
    let (count, dim) = elementwise_grid(&scores, rows);
    window_softmax_forward_kernel::launch::<R>(
        &scores.client.clone(),
        count,
        dim,
        scores.into_tensor_arg(),
        into_contiguous(table).into_tensor_arg(),
        into_contiguous(index).into_tensor_arg(),
        mask.into_tensor_arg(),
        probs.clone().into_tensor_arg(),
        n,
        heads,
        num_windows,
        has_mask,
        [dtype.into(), index_dtype.into()],
    );
    counters::FORWARD.bump();
    probs
}

/// Fused softmax backward: `dscores = probs ⊙ (grad_probs − Σ_k grad_probs ⊙ probs)`.
///
/// - `probs`, `grad_probs`: same shape and dtype, `[windows, heads, n, n]` for the window
///   softmax; the kernel only reads rows of the last dimension, so any shape works (the
///   softmax node of `crate::softmax` passes `[1, 1, rows, width]`);
/// - returns `dscores` shaped and typed like `probs`, computed in f32.
pub fn window_softmax_backward_cube<R: CubeRuntime>(
    probs: CubeTensor<R>,
    grad_probs: CubeTensor<R>,
) -> CubeTensor<R> {
    let shape = probs.meta.shape().clone();
    let n = shape.as_slice().last().copied().unwrap_or(1);
    let dtype = probs.dtype;
    assert_dtype("grad_probs", &grad_probs, dtype);
    assert_eq!(
        grad_probs.meta.shape(),
        probs.meta.shape(),
        "window_softmax_backward: grad_probs must have the shape of probs"
    );
    let probs = into_contiguous(probs);
    let dscores = empty_like(&probs, shape.clone(), dtype);
    let rows = if n == 0 { 0 } else { shape.num_elements() / n };
    if rows == 0 {
        return dscores;
    }
    let (count, dim) = elementwise_grid(&probs, rows);
    window_softmax_backward_kernel::launch::<R>(
        &probs.client.clone(),
        count,
        dim,
        probs.into_tensor_arg(),
        into_contiguous(grad_probs).into_tensor_arg(),
        dscores.clone().into_tensor_arg(),
        n,
        dtype.into(),
    );
    counters::BACKWARD.bump();
    dscores
}
