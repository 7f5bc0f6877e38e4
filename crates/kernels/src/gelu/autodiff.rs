//! [`GeluKernel`] for Burn's `Autodiff<B>`: the forward runs the inner backend's fused kernel
//! once and records one graph node whose backward runs the inner fused backward, instead of the
//! several nodes of the decomposed formula.
//!
//! The nodes keep `x` (and `bias`) through the checkpointer, like Burn's own compute-bound ops,
//! and the backward recomputes the activation's derivative from them.

use burn::backend::Autodiff;
use burn::backend::autodiff::NodeId;
use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::ops::FloatTensor;

use super::GeluKernel;

/// The graph node of one fused QuickGELU; parent `[x]`, state the checkpoint id of `x`.
#[derive(Debug)]
struct FusedQuickGeluBackward;

impl<B: GeluKernel> Backward<B, 1> for FusedQuickGeluBackward {
    type State = NodeId;

    fn backward(
        self,
        ops: Ops<Self::State, 1>,
        grads: &mut Gradients,
        checkpointer: &mut Checkpointer,
    ) {
        let [node_x] = ops.parents;
        let grad_out = grads.consume::<B>(&ops.node);
        let x = checkpointer.retrieve_node_output::<FloatTensor<B>>(ops.state);
        if let Some(node) = node_x {
            grads.register::<B>(node.id, B::fused_quick_gelu_backward(x, grad_out));
        }
    }
}

/// The graph node of one fused GELU without bias; parent `[x]`, state the checkpoint id of `x`.
#[derive(Debug)]
struct FusedGeluBackward;

impl<B: GeluKernel> Backward<B, 1> for FusedGeluBackward {
    type State = NodeId;

    fn backward(
        self,
        ops: Ops<Self::State, 1>,
        grads: &mut Gradients,
        checkpointer: &mut Checkpointer,
    ) {
        let [node_x] = ops.parents;
        let grad_out = grads.consume::<B>(&ops.node);
        let x = checkpointer.retrieve_node_output::<FloatTensor<B>>(ops.state);
        if let Some(node) = node_x {
            let (dx, _) = B::fused_bias_gelu_backward(x, None, grad_out);
            grads.register::<B>(node.id, dx);
        }
    }
}

/// The graph node of one fused bias + GELU; parents `[x, bias]`, state the checkpoint ids of
/// `(x, bias)`.
#[derive(Debug)]
struct FusedBiasGeluBackward;

impl<B: GeluKernel> Backward<B, 2> for FusedBiasGeluBackward {
    type State = (NodeId, NodeId);

    fn backward(
        self,
        ops: Ops<Self::State, 2>,
        grads: &mut Gradients,
        checkpointer: &mut Checkpointer,
    ) {
        let [node_x, node_bias] = ops.parents;
        let grad_out = grads.consume::<B>(&ops.node);
        let (x_id, bias_id) = ops.state;
        let x = checkpointer.retrieve_node_output::<FloatTensor<B>>(x_id);
        let bias = checkpointer.retrieve_node_output::<FloatTensor<B>>(bias_id);

        // One fused backward yields both gradients; an untracked one is dropped.
        let (dx, dbias) = B::fused_bias_gelu_backward(x, Some(bias), grad_out);
        let dbias = dbias.expect("a bias was given");
        for (node, grad) in [(node_x, dx), (node_bias, dbias)] {
            if let Some(node) = node {
                grads.register::<B>(node.id, grad);
            }
        }
    }
}

impl<B: GeluKernel, C: CheckpointStrategy> GeluKernel for Autodiff<B, C> {
    /// Differentiable with respect to `x`.
    fn fused_quick_gelu(x: FloatTensor<Self>) -> FloatTensor<Self> {
        match FusedQuickGeluBackward
            .prepare::<C>([x.node.clone()])
            .compute_bound()
            .stateful()
        {
            OpsKind::Tracked(mut prep) => {
                let x_id = prep.checkpoint(&x);
                prep.finish(x_id, B::fused_quick_gelu(x.primitive))
            }
            OpsKind::UnTracked(prep) => prep.finish(B::fused_quick_gelu(x.primitive)),
        }
    }

    /// Runs the inner fused backward on the values; the result is not itself differentiable
    /// (no second-order gradients through the fused GELUs).
    fn fused_quick_gelu_backward(
        x: FloatTensor<Self>,
        grad_out: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        let dx = B::fused_quick_gelu_backward(x.primitive, grad_out.primitive);
        <Self as AutodiffBackend>::from_inner(dx)
    }

    /// Differentiable with respect to `x` and `bias`.
    fn fused_bias_gelu(x: FloatTensor<Self>, bias: Option<FloatTensor<Self>>) -> FloatTensor<Self> {
        let Some(bias) = bias else {
            return match FusedGeluBackward
                .prepare::<C>([x.node.clone()])
                .compute_bound()
                .stateful()
            {
                OpsKind::Tracked(mut prep) => {
                    let x_id = prep.checkpoint(&x);
                    prep.finish(x_id, B::fused_bias_gelu(x.primitive, None))
                }
                OpsKind::UnTracked(prep) => prep.finish(B::fused_bias_gelu(x.primitive, None)),
            };
        };
        match FusedBiasGeluBackward
            .prepare::<C>([x.node.clone(), bias.node.clone()])
            .compute_bound()
            .stateful()
        {
            OpsKind::Tracked(mut prep) => {
                let state = (prep.checkpoint(&x), prep.checkpoint(&bias));
                prep.finish(state, B::fused_bias_gelu(x.primitive, Some(bias.primitive)))
            }
            OpsKind::UnTracked(prep) => {
                prep.finish(B::fused_bias_gelu(x.primitive, Some(bias.primitive)))
            }
        }
    }

    /// Runs the inner fused backward on the values; the results are not themselves
    /// differentiable.
    fn fused_bias_gelu_backward(
        x: FloatTensor<Self>,
        bias: Option<FloatTensor<Self>>,
        grad_out: FloatTensor<Self>,
    ) -> (FloatTensor<Self>, Option<FloatTensor<Self>>) {
        let (dx, dbias) =
            B::fused_bias_gelu_backward(x.primitive, bias.map(|b| b.primitive), grad_out.primitive);
        let detached = <Self as AutodiffBackend>::from_inner;
        (detached(dx), dbias.map(detached))
    }
}
