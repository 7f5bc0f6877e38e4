//! [`SoftmaxKernel`] for Burn's `Autodiff<B>`: the forward runs the inner backend's softmax
//! once and records one graph node; its backward is the inner fused backward.
//!
//! The node keeps the result it produced and the dimension: the backward needs nothing else
//! (not the input, not the maximum or the sum of exponentials the decomposed formula keeps).

use burn::backend::Autodiff;
use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::ops::FloatTensor;

use super::SoftmaxKernel;

/// The graph node of one softmax; its state is the result and the dimension.
#[derive(Debug)]
struct SoftmaxBackward;

impl<B: SoftmaxKernel> Backward<B, 1> for SoftmaxBackward {
    type State = (FloatTensor<B>, usize);

    fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, _: &mut Checkpointer) {
        let [node_x] = ops.parents;
        let dy = grads.consume::<B>(&ops.node);
        let (y, dim) = ops.state;
        if let Some(node) = node_x {
            grads.register::<B>(node.id, B::fused_softmax_backward(y, dy, dim));
        }
    }
}

impl<B: SoftmaxKernel, C: CheckpointStrategy> SoftmaxKernel for Autodiff<B, C> {
    /// Differentiable with respect to `x`, as one node.
    fn fused_softmax(x: FloatTensor<Self>, dim: usize) -> FloatTensor<Self> {
        match SoftmaxBackward
            .prepare::<C>([x.node.clone()])
            .compute_bound()
            .stateful()
        {
            OpsKind::Tracked(prep) => {
                let y = B::fused_softmax(x.primitive, dim);
                prep.finish((y.clone(), dim), y)
            }
            OpsKind::UnTracked(prep) => prep.finish(B::fused_softmax(x.primitive, dim)),
        }
    }

    /// Runs the inner fused backward on the values; the result is not itself differentiable.
    fn fused_softmax_backward(
        y: FloatTensor<Self>,
        dy: FloatTensor<Self>,
        dim: usize,
    ) -> FloatTensor<Self> {
        let dx = B::fused_softmax_backward(y.primitive, dy.primitive, dim);
        <Self as AutodiffBackend>::from_inner(dx)
    }
}
