//! [`WindowProcessKernel`] for Burn's `Autodiff<B>`: each direction is one graph node whose
//! backward is the other direction on the inner backend (the maps are permutations plus
//! padding, so nothing is saved but the geometry).

use burn::backend::Autodiff;
use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::tensor::ops::FloatTensor;

use super::{WindowGeometry, WindowProcessKernel};

/// The graph node of one window process; parent `[x]`; backward: reverse.
#[derive(Debug)]
struct WindowProcessBackward;

impl<B: WindowProcessKernel> Backward<B, 1> for WindowProcessBackward {
    type State = WindowGeometry;

    fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, _: &mut Checkpointer) {
        let [node_x] = ops.parents;
        let grad_out = grads.consume::<B>(&ops.node);
        if let Some(node) = node_x {
            grads.register::<B>(
                node.id,
                B::fused_window_process_reverse(grad_out, ops.state),
            );
        }
    }
}

/// The graph node of one window process reverse; parent `[windows]`; backward: process
/// (padding tokens get a zero gradient).
#[derive(Debug)]
struct WindowProcessReverseBackward;

impl<B: WindowProcessKernel> Backward<B, 1> for WindowProcessReverseBackward {
    type State = WindowGeometry;

    fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, _: &mut Checkpointer) {
        let [node_windows] = ops.parents;
        let grad_out = grads.consume::<B>(&ops.node);
        if let Some(node) = node_windows {
            grads.register::<B>(node.id, B::fused_window_process(grad_out, ops.state));
        }
    }
}

impl<B: WindowProcessKernel, C: CheckpointStrategy> WindowProcessKernel for Autodiff<B, C> {
    /// Differentiable with respect to `x`.
    fn fused_window_process(x: FloatTensor<Self>, geometry: WindowGeometry) -> FloatTensor<Self> {
        match WindowProcessBackward
            .prepare::<C>([x.node.clone()])
            .compute_bound()
            .stateful()
        {
            OpsKind::Tracked(prep) => {
                prep.finish(geometry, B::fused_window_process(x.primitive, geometry))
            }
            OpsKind::UnTracked(prep) => prep.finish(B::fused_window_process(x.primitive, geometry)),
        }
    }

    /// Differentiable with respect to `windows`.
    fn fused_window_process_reverse(
        windows: FloatTensor<Self>,
        geometry: WindowGeometry,
    ) -> FloatTensor<Self> {
        match WindowProcessReverseBackward
            .prepare::<C>([windows.node.clone()])
            .compute_bound()
            .stateful()
        {
            OpsKind::Tracked(prep) => prep.finish(
                geometry,
                B::fused_window_process_reverse(windows.primitive, geometry),
            ),
            OpsKind::UnTracked(prep) => {
                prep.finish(B::fused_window_process_reverse(windows.primitive, geometry))
            }
        }
    }
}
