//! [`BiasDropoutAddKernel`] for Burn's `Autodiff<B>`: the forward runs the inner backend's
//! fused kernel once and records one graph node whose backward runs the inner fused backward,
//! instead of the nodes of `add`, `dropout` (with its saved mask) and `add`.
//!
//! The node's state is only `p` and the seed tensor (`[2]`, on the device; absent at `p = 0`):
//! the backward regenerates the mask from it, and none of the gradients depends on `x`, `bias`
//! or `residual`, so no activation is kept for the backward. The seed is an Int tensor, which
//! autodiff does not track: `IntTensor<Autodiff<B>>` is `IntTensor<B>`.

use burn::backend::Autodiff;
use burn::backend::autodiff::NodeId;
use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::ops::{FloatTensor, IntTensor};

use super::BiasDropoutAddKernel;

/// The graph node of one fused call: `Backward<B, 3>` with parents `[x, residual, bias]`,
/// `Backward<B, 2>` with parents `[x, residual]` (no bias).
#[derive(Debug)]
struct FusedBiasDropoutAddBackward;

/// The dropout parameters `(p, seed)` the backward regenerates the mask from.
type State<B> = (f64, Option<IntTensor<B>>);

/// Registers the gradients of the parents that require one: `dy` for the residual, the fused
/// backward's `dx` and `dbias` for `x` and the bias. Skips the kernel when only the residual
/// is tracked.
fn register_grads<B: BiasDropoutAddKernel>(
    grad_out: FloatTensor<B>,
    [x, residual, bias]: [Option<NodeId>; 3],
    (p, seed): State<B>,
    grads: &mut Gradients,
) {
    if x.is_some() || bias.is_some() {
        let (dx, dbias) =
            B::fused_bias_dropout_add_backward(grad_out.clone(), p, seed, bias.is_some());
        if let Some(x) = x {
            grads.register::<B>(x, dx);
        }
        if let (Some(bias), Some(dbias)) = (bias, dbias) {
            grads.register::<B>(bias, dbias);
        }
    }
    if let Some(residual) = residual {
        grads.register::<B>(residual, grad_out);
    }
}

impl<B: BiasDropoutAddKernel> Backward<B, 3> for FusedBiasDropoutAddBackward {
    type State = State<B>;

    fn backward(self, ops: Ops<State<B>, 3>, grads: &mut Gradients, _: &mut Checkpointer) {
        let grad_out = grads.consume::<B>(&ops.node);
        let parents = ops.parents.map(|node| node.map(|node| node.id));
        register_grads::<B>(grad_out, parents, ops.state, grads);
    }
}

impl<B: BiasDropoutAddKernel> Backward<B, 2> for FusedBiasDropoutAddBackward {
    type State = State<B>;

    fn backward(self, ops: Ops<State<B>, 2>, grads: &mut Gradients, _: &mut Checkpointer) {
        let grad_out = grads.consume::<B>(&ops.node);
        let [x, residual] = ops.parents.map(|node| node.map(|node| node.id));
        register_grads::<B>(grad_out, [x, residual, None], ops.state, grads);
    }
}

macro_rules! finish_node {
    ($n:literal, $nodes:expr, $forward:expr, $p:expr, $seed:expr) => {
        match <FusedBiasDropoutAddBackward as Backward<B, $n>>::prepare::<C>(
            FusedBiasDropoutAddBackward,
            $nodes,
        )
        .compute_bound()
        .stateful()
        {
            OpsKind::Tracked(prep) => prep.finish(($p, $seed), $forward),
            OpsKind::UnTracked(prep) => prep.finish($forward),
        }
    };
}

impl<B: BiasDropoutAddKernel, C: CheckpointStrategy> BiasDropoutAddKernel for Autodiff<B, C> {
    /// Differentiable with respect to `x`, `bias` and `residual`.
    fn fused_bias_dropout_add(
        x: FloatTensor<Self>,
        bias: Option<FloatTensor<Self>>,
        residual: FloatTensor<Self>,
        p: f64,
        seed: Option<IntTensor<Self>>,
    ) -> FloatTensor<Self> {
        // The node keeps a handle on the seed tensor (a clone shares the buffer).
        match bias {
            Some(bias) => {
                let nodes = [x.node.clone(), residual.node.clone(), bias.node.clone()];
                let y = B::fused_bias_dropout_add(
                    x.primitive,
                    Some(bias.primitive),
                    residual.primitive,
                    p,
                    seed.clone(),
                );
                finish_node!(3, nodes, y, p, seed)
            }
            None => {
                let nodes = [x.node.clone(), residual.node.clone()];
                let y = B::fused_bias_dropout_add(
                    x.primitive,
                    None,
                    residual.primitive,
                    p,
                    seed.clone(),
                );
                finish_node!(2, nodes, y, p, seed)
            }
        }
    }

    /// Runs the inner fused backward on the values; the result is not itself differentiable
    /// (no second-order gradients through this node).
    fn fused_bias_dropout_add_backward(
        grad_out: FloatTensor<Self>,
        p: f64,
        seed: Option<IntTensor<Self>>,
        with_bias: bool,
    ) -> (FloatTensor<Self>, Option<FloatTensor<Self>>) {
        let (dx, dbias) =
            B::fused_bias_dropout_add_backward(grad_out.primitive, p, seed, with_bias);
        let detached = <Self as AutodiffBackend>::from_inner;
        (detached(dx), dbias.map(detached))
    }
}
