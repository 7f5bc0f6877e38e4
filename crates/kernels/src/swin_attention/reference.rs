//! The window-attention softmax with plain Burn ops on any backend: the ground truth of the
//! tests and the fallback path. Computes in the inputs' dtype (callers widen half precision).

use burn::tensor::activation::softmax;
use burn::tensor::backend::Backend;
use burn::tensor::{IndexingUpdateOp, Int, Tensor};

/// `softmax(scores + table[index] + mask)` over the last dimension.
///
/// `scores: [windows, heads, n, n]`, `table: [offsets, heads]`, `index: [n · n]`, `mask:
/// [num_windows, n, n]` with `windows` a multiple of `num_windows` → `[windows, heads, n, n]`.
pub fn window_softmax_reference<B: Backend>(
    scores: Tensor<B, 4>,
    table: Tensor<B, 2>,
    index: Tensor<B, 1, Int>,
    mask: Option<Tensor<B, 3>>,
) -> Tensor<B, 4> {
    let [windows, heads, n, _] = scores.dims();
    let bias = table
        .select(0, index)
        .reshape([n, n, heads])
        .permute([2, 0, 1])
        .unsqueeze_dim::<4>(0);
    let logits = scores + bias;
    let logits = match mask {
        Some(mask) => {
            let num_windows = mask.dims()[0];
            let batch = windows / num_windows;
            let mask = mask.reshape([1, num_windows, 1, n, n]);
            (logits.reshape([batch, num_windows, heads, n, n]) + mask)
                .reshape([windows, heads, n, n])
        }
        None => logits,
    };
    softmax(logits, 3)
}

/// The gradient of the softmax with respect to its logits, `probs ⊙ (grad_probs − Σ_k
/// grad_probs ⊙ probs)`; both inputs and the result `[windows, heads, n, n]`.
pub fn window_softmax_backward_reference<B: Backend>(
    probs: Tensor<B, 4>,
    grad_probs: Tensor<B, 4>,
) -> Tensor<B, 4> {
    let dot = (grad_probs.clone() * probs.clone()).sum_dim(3);
    probs * (grad_probs - dot)
}

/// The gradient of the relative position bias table, `[offsets, heads]`, from the gradient of
/// the logits `dscores: [windows, heads, n, n]`: summed over windows, then each `(q, k)` pair
/// added into row `index[q · n + k]`. Accumulates in the dtype of `dscores` (callers widen
/// half precision).
pub fn relative_position_bias_table_grad<B: Backend>(
    dscores: Tensor<B, 4>,
    index: Tensor<B, 1, Int>,
    offsets: usize,
) -> Tensor<B, 2> {
    let [_, heads, n, _] = dscores.dims();
    let per_pair = dscores.sum_dim(0).reshape([heads, n * n]).swap_dims(0, 1);
    let zeros = Tensor::<B, 2>::zeros([offsets, heads], &per_pair.device()).cast(per_pair.dtype());
    zeros.select_assign(0, index, per_pair, IndexingUpdateOp::Add)
}
