//! [`SwinAttentionKernel`] for Burn's `Autodiff<B>`: the forward runs the inner backend's fused
//! kernel once and records one graph node with parents `[scores, table]`; its backward runs the
//! inner fused backward for the scores' gradient and reduces that into the table's gradient.
//!
//! The node keeps the probabilities it produced (the softmax backward needs nothing else) and
//! the index; the mask is a constant of the model and gets no gradient.

use burn::backend::Autodiff;
use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::ops::{FloatTensor, IntTensor};
use burn::tensor::{DType, Int, Shape, Tensor, TensorMetadata};

use super::{SwinAttentionKernel, relative_position_bias_table_grad};
use crate::fallback::{narrow, widen};

/// What the backward needs: the forward's probabilities, the index, and the table's shape and
/// dtype.
#[derive(Clone, Debug)]
struct SavedSoftmax<B: SwinAttentionKernel> {
    probs: FloatTensor<B>,
    index: IntTensor<B>,
    table_shape: Shape,
    table_dtype: DType,
}

/// The graph node of one fused window softmax.
#[derive(Debug)]
struct WindowSoftmaxBackward;

impl<B: SwinAttentionKernel> Backward<B, 2> for WindowSoftmaxBackward {
    type State = SavedSoftmax<B>;

    fn backward(self, ops: Ops<Self::State, 2>, grads: &mut Gradients, _: &mut Checkpointer) {
        let [node_scores, node_table] = ops.parents;
        let grad_probs = grads.consume::<B>(&ops.node);
        let saved = ops.state;
        let dscores = B::fused_window_softmax_backward(saved.probs, grad_probs);
        if let Some(node) = node_table {
            let offsets = saved.table_shape[0];
            let dtable = relative_position_bias_table_grad::<B>(
                widen::<B, 4>(dscores.clone()),
                Tensor::<B, 1, Int>::from_primitive(saved.index),
                offsets,
            );
            grads.register::<B>(
                node.id,
                narrow(dtable, saved.table_dtype, saved.table_shape),
            );
        }
        if let Some(node) = node_scores {
            grads.register::<B>(node.id, dscores);
        }
    }
}

impl<B: SwinAttentionKernel, C: CheckpointStrategy> SwinAttentionKernel for Autodiff<B, C> {
    /// Differentiable with respect to `scores` and `table`.
    fn fused_window_softmax(
        scores: FloatTensor<Self>,
        table: FloatTensor<Self>,
        index: IntTensor<Self>,
        mask: Option<FloatTensor<Self>>,
    ) -> FloatTensor<Self> {
        let (table_shape, table_dtype) = (table.primitive.shape(), table.primitive.dtype());
        let forward = |index: IntTensor<B>| {
            B::fused_window_softmax(
                scores.primitive.clone(),
                table.primitive.clone(),
                index,
                mask.map(|m| m.primitive),
            )
        };
        match WindowSoftmaxBackward
            .prepare::<C>([scores.node.clone(), table.node.clone()])
            .compute_bound()
            .stateful()
        {
            OpsKind::Tracked(prep) => {
                let probs = forward(index.clone());
                let saved = SavedSoftmax {
                    probs: probs.clone(),
                    index,
                    table_shape,
                    table_dtype,
                };
                prep.finish(saved, probs)
            }
            OpsKind::UnTracked(prep) => prep.finish(forward(index)),
        }
    }

    /// Runs the inner fused backward on the values; the result is not itself differentiable.
    fn fused_window_softmax_backward(
        probs: FloatTensor<Self>,
        grad_probs: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        let dscores = B::fused_window_softmax_backward(probs.primitive, grad_probs.primitive);
        <Self as AutodiffBackend>::from_inner(dscores)
    }
}
