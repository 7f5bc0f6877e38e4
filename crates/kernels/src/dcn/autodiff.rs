//! [`DcnKernel`] for Burn's `Autodiff<B>`: the forward runs `B`'s and records one graph node
//! whose backward is `B`'s [`DcnKernel::dcn_backward`] (burnacc's kernel on CubeCL devices,
//! Burn's elsewhere), where Burn's own node would always call Burn's backward.
//!
//! One node type serves the four forms: its parents are `x`, `offset`, `weight`, then `mask`
//! and `bias` where given, in that order, and the gradients come back in the same order.

use burn::backend::Autodiff;
use burn::backend::autodiff::NodeId;
use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::ops::{DeformConv2dBackward, DeformConvOptions, FloatTensor};

use super::DcnKernel;

/// The graph node of one deformable convolution with `N` differentiable inputs (3 to 5).
#[derive(Debug)]
struct DeformConv2dNode<const N: usize> {
    has_mask: bool,
    has_bias: bool,
    options: DeformConvOptions<2>,
}

impl<B: DcnKernel, const N: usize> Backward<B, N> for DeformConv2dNode<N> {
    /// The checkpoint ids of the inputs, in parent order.
    type State = [NodeId; N];

    fn backward(
        self,
        ops: Ops<Self::State, N>,
        grads: &mut Gradients,
        checkpointer: &mut Checkpointer,
    ) {
        let grad_out = grads.consume::<B>(&ops.node);
        let mut inputs = ops
            .state
            .into_iter()
            .map(|id| checkpointer.retrieve_node_output::<FloatTensor<B>>(id));
        let mut next = || inputs.next().expect("one state per parent");
        let (x, offset, weight) = (next(), next(), next());
        let mask = self.has_mask.then(&mut next);
        let bias = self.has_bias.then(&mut next);
        let g = B::dcn_backward(x, offset, weight, mask, bias, grad_out, self.options);
        let all = [
            Some(g.x_grad),
            Some(g.offset_grad),
            Some(g.weight_grad),
            g.mask_grad,
            g.bias_grad,
        ];
        for (parent, grad) in ops.parents.into_iter().zip(all.into_iter().flatten()) {
            if let Some(node) = parent {
                grads.register::<B>(node.id, grad);
            }
        }
    }
}

/// Records `B`'s forward of `inputs` (`x`, `offset`, `weight`, then the given ones of `mask`
/// and `bias`) as one node with `N` parents.
fn record<B: DcnKernel, C: CheckpointStrategy, const N: usize>(
    inputs: [FloatTensor<Autodiff<B, C>>; N],
    has_mask: bool,
    has_bias: bool,
    options: DeformConvOptions<2>,
) -> FloatTensor<Autodiff<B, C>> {
    let node = DeformConv2dNode::<N> {
        has_mask,
        has_bias,
        options: options.clone(),
    };
    let forward = |inputs: [FloatTensor<Autodiff<B, C>>; N]| {
        let mut primitives = inputs.into_iter().map(|t| t.primitive);
        let mut next = || primitives.next().expect("N inputs");
        let (x, offset, weight) = (next(), next(), next());
        let mask = has_mask.then(&mut next);
        let bias = has_bias.then(&mut next);
        B::dcn_forward(x, offset, weight, mask, bias, options)
    };
    match node
        .prepare::<C>(inputs.clone().map(|t| t.node))
        .compute_bound()
        .stateful()
    {
        OpsKind::Tracked(mut prep) => {
            let state = inputs.each_ref().map(|t| prep.checkpoint(t));
            prep.finish(state, forward(inputs))
        }
        OpsKind::UnTracked(prep) => prep.finish(forward(inputs)),
    }
}

impl<B: DcnKernel, C: CheckpointStrategy> DcnKernel for Autodiff<B, C> {
    /// Differentiable with respect to every input.
    fn dcn_forward(
        x: FloatTensor<Self>,
        offset: FloatTensor<Self>,
        weight: FloatTensor<Self>,
        mask: Option<FloatTensor<Self>>,
        bias: Option<FloatTensor<Self>>,
        options: DeformConvOptions<2>,
    ) -> FloatTensor<Self> {
        match (mask, bias) {
            (None, None) => record::<B, C, 3>([x, offset, weight], false, false, options),
            (Some(mask), None) => {
                record::<B, C, 4>([x, offset, weight, mask], true, false, options)
            }
            (None, Some(bias)) => {
                record::<B, C, 4>([x, offset, weight, bias], false, true, options)
            }
            (Some(mask), Some(bias)) => {
                record::<B, C, 5>([x, offset, weight, mask, bias], true, true, options)
            }
        }
    }

    /// Runs `B`'s backward on the values; the results are not themselves differentiable.
    fn dcn_backward(
        x: FloatTensor<Self>,
        offset: FloatTensor<Self>,
        weight: FloatTensor<Self>,
        mask: Option<FloatTensor<Self>>,
        bias: Option<FloatTensor<Self>>,
        grad_out: FloatTensor<Self>,
        options: DeformConvOptions<2>,
    ) -> DeformConv2dBackward<Self> {
        let g = B::dcn_backward(
            x.primitive,
            offset.primitive,
            weight.primitive,
            mask.map(|t| t.primitive),
            bias.map(|t| t.primitive),
            grad_out.primitive,
            options,
        );
        let detached = <Self as AutodiffBackend>::from_inner;
        DeformConv2dBackward::new(
            detached(g.x_grad),
            detached(g.offset_grad),
            detached(g.weight_grad),
            g.mask_grad.map(detached),
            g.bias_grad.map(detached),
        )
    }
}
