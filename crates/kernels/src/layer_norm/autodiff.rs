//! [`LayerNormKernel`] for Burn's `Autodiff<B>`: the forward runs the inner backend's fused
//! kernel once and records one graph node whose backward runs the inner fused backward, instead
//! of the dozen nodes of the decomposed formula.
//!
//! The node keeps `x` and `gamma` (through the checkpointer, like Burn's own compute-bound ops)
//! and the per-row `mean` and `rstd` (`[rows]`, a few bytes per row), so the backward needs no
//! recomputation of the statistics.

use burn::backend::Autodiff;
use burn::backend::autodiff::NodeId;
use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::ops::FloatTensor;

use super::LayerNormKernel;

/// The graph node of one fused LayerNorm; parents `[x, gamma, beta]`.
#[derive(Debug)]
struct FusedLayerNormBackward;

/// `(x, gamma)` checkpoint ids and the forward's `(mean, rstd)`.
type State<B> = (NodeId, NodeId, FloatTensor<B>, FloatTensor<B>);

impl<B: LayerNormKernel> Backward<B, 3> for FusedLayerNormBackward {
    type State = State<B>;

    fn backward(
        self,
        ops: Ops<Self::State, 3>,
        grads: &mut Gradients,
        checkpointer: &mut Checkpointer,
    ) {
        let [node_x, node_gamma, node_beta] = ops.parents;
        let grad_out = grads.consume::<B>(&ops.node);
        let (x_id, gamma_id, mean, rstd) = ops.state;
        let x = checkpointer.retrieve_node_output::<FloatTensor<B>>(x_id);
        let gamma = checkpointer.retrieve_node_output::<FloatTensor<B>>(gamma_id);

        // One fused backward yields all three gradients; the untracked ones are dropped.
        let (dx, dgamma, dbeta) = B::fused_layer_norm_backward(x, gamma, grad_out, mean, rstd);
        for (node, grad) in [(node_x, dx), (node_gamma, dgamma), (node_beta, dbeta)] {
            if let Some(node) = node {
                grads.register::<B>(node.id, grad);
            }
        }
    }
}

impl<B: LayerNormKernel, C: CheckpointStrategy> LayerNormKernel for Autodiff<B, C> {
    /// Differentiable in `y` with respect to `x`, `gamma` and `beta`; the returned statistics
    /// are constants (detached).
    fn fused_layer_norm_with_stats(
        x: FloatTensor<Self>,
        gamma: FloatTensor<Self>,
        beta: FloatTensor<Self>,
        eps: f64,
    ) -> (FloatTensor<Self>, FloatTensor<Self>, FloatTensor<Self>) {
        let nodes = [x.node.clone(), gamma.node.clone(), beta.node.clone()];
        let detached = <Self as AutodiffBackend>::from_inner;
        match FusedLayerNormBackward
            .prepare::<C>(nodes)
            .compute_bound()
            .stateful()
        {
            OpsKind::Tracked(mut prep) => {
                let x_id = prep.checkpoint(&x);
                let gamma_id = prep.checkpoint(&gamma);
                let (y, mean, rstd) = B::fused_layer_norm_with_stats(
                    x.primitive,
                    gamma.primitive,
                    beta.primitive,
                    eps,
                );
                let state = (x_id, gamma_id, mean.clone(), rstd.clone());
                (prep.finish(state, y), detached(mean), detached(rstd))
            }
            OpsKind::UnTracked(prep) => {
                let (y, mean, rstd) = B::fused_layer_norm_with_stats(
                    x.primitive,
                    gamma.primitive,
                    beta.primitive,
                    eps,
                );
                (prep.finish(y), detached(mean), detached(rstd))
            }
        }
    }

    /// Runs the inner fused backward on the values; the result is not itself differentiable
    /// (no second-order gradients through LayerNorm).
    fn fused_layer_norm_backward(
        x: FloatTensor<Self>,
        gamma: FloatTensor<Self>,
        grad_out: FloatTensor<Self>,
        mean: FloatTensor<Self>,
        rstd: FloatTensor<Self>,
    ) -> (FloatTensor<Self>, FloatTensor<Self>, FloatTensor<Self>) {
        let (dx, dgamma, dbeta) = B::fused_layer_norm_backward(
            x.primitive,
            gamma.primitive,
            grad_out.primitive,
            mean.primitive,
            rstd.primitive,
        );
        let detached = <Self as AutodiffBackend>::from_inner;
        (detached(dx), detached(dgamma), detached(dbeta))
    }
}
