//! [`BatchNormKernel`] for Burn's `Autodiff<B>`: the forward runs the inner backend's fused
//! kernels once and records one graph node whose backward runs the inner fused backward,
//! instead of the two dozen nodes of the decomposed formula (`burn::nn::BatchNorm`'s).
//!
//! The node keeps `x` and `gamma` (through the checkpointer, like Burn's own compute-bound
//! ops), the per-channel `mean` and `rstd` (`[C]`), and, with a fused ReLU, its own output
//! (the mask of the ReLU's gradient), so the backward recomputes nothing.

use burn::backend::Autodiff;
use burn::backend::autodiff::NodeId;
use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::ops::FloatTensor;

use super::BatchNormKernel;

/// The graph node of one fused batch norm; parents `[x, gamma, beta]`.
#[derive(Debug)]
struct FusedBatchNormBackward;

/// `(x, gamma)` checkpoint ids, the forward's `(mean, rstd)` and, with a fused ReLU, its
/// output.
type State<B> = (
    NodeId,
    NodeId,
    FloatTensor<B>,
    FloatTensor<B>,
    Option<FloatTensor<B>>,
);

impl<B: BatchNormKernel> Backward<B, 3> for FusedBatchNormBackward {
    type State = State<B>;

    fn backward(
        self,
        ops: Ops<Self::State, 3>,
        grads: &mut Gradients,
        checkpointer: &mut Checkpointer,
    ) {
        let [node_x, node_gamma, node_beta] = ops.parents;
        let grad_out = grads.consume::<B>(&ops.node);
        let (x_id, gamma_id, mean, rstd, relu_output) = ops.state;
        let x = checkpointer.retrieve_node_output::<FloatTensor<B>>(x_id);
        let gamma = checkpointer.retrieve_node_output::<FloatTensor<B>>(gamma_id);

        // One fused backward yields all three gradients; the untracked ones are dropped.
        let (dx, dgamma, dbeta) =
            B::fused_batch_norm_backward(x, gamma, grad_out, mean, rstd, relu_output);
        for (node, grad) in [(node_x, dx), (node_gamma, dgamma), (node_beta, dbeta)] {
            if let Some(node) = node {
                grads.register::<B>(node.id, grad);
            }
        }
    }
}

impl<B: BatchNormKernel, C: CheckpointStrategy> BatchNormKernel for Autodiff<B, C> {
    /// Differentiable in `y` with respect to `x`, `gamma` and `beta`; the returned statistics
    /// are constants (detached).
    fn fused_batch_norm_with_stats(
        x: FloatTensor<Self>,
        gamma: FloatTensor<Self>,
        beta: FloatTensor<Self>,
        eps: f64,
        relu: bool,
    ) -> (FloatTensor<Self>, FloatTensor<Self>, FloatTensor<Self>) {
        let nodes = [x.node.clone(), gamma.node.clone(), beta.node.clone()];
        let detached = <Self as AutodiffBackend>::from_inner;
        // The inner backend's forward on the values.
        let inner = |x: FloatTensor<Self>, gamma: FloatTensor<Self>, beta: FloatTensor<Self>| {
            B::fused_batch_norm_with_stats(x.primitive, gamma.primitive, beta.primitive, eps, relu)
        };
        match FusedBatchNormBackward
            .prepare::<C>(nodes)
            .compute_bound()
            .stateful()
        {
            OpsKind::Tracked(mut prep) => {
                let x_id = prep.checkpoint(&x);
                let gamma_id = prep.checkpoint(&gamma);
                let (y, mean, rstd) = inner(x, gamma, beta);
                let relu_output = relu.then(|| y.clone());
                let state = (x_id, gamma_id, mean.clone(), rstd.clone(), relu_output);
                (prep.finish(state, y), detached(mean), detached(rstd))
            }
            OpsKind::UnTracked(prep) => {
                let (y, mean, rstd) = inner(x, gamma, beta);
                (prep.finish(y), detached(mean), detached(rstd))
            }
        }
    }

    /// Runs the inner fused backward on the values; the result is not itself differentiable
    /// (no second-order gradients through the batch norm).
    fn fused_batch_norm_backward(
        x: FloatTensor<Self>,
        gamma: FloatTensor<Self>,
        grad_out: FloatTensor<Self>,
        mean: FloatTensor<Self>,
        rstd: FloatTensor<Self>,
        relu_output: Option<FloatTensor<Self>>,
    ) -> (FloatTensor<Self>, FloatTensor<Self>, FloatTensor<Self>) {
        let (dx, dgamma, dbeta) = B::fused_batch_norm_backward(
            x.primitive,
            gamma.primitive,
            grad_out.primitive,
            mean.primitive,
            rstd.primitive,
            relu_output.map(|y| y.primitive),
        );
        let detached = <Self as AutodiffBackend>::from_inner;
        (detached(dx), detached(dgamma), detached(dbeta))
    }
}
