//! [`CheckpointBackend`]: autodiff backends whose tensors can be told apart by graph node.

use burn::backend::Autodiff;
use burn::backend::autodiff::NodeId;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::ops::FloatTensor;
use burnacc_backend::Acc;

/// The identity of a tensor's autodiff node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct NodeKey(NodeId);

/// Autodiff backends on which blocks can be checkpointed: Burn's `Autodiff<B, C>`, and `Acc`
/// above one.
pub trait CheckpointBackend: AutodiffBackend {
    /// The autodiff node of a tensor (two handles of one tensor share it).
    fn node_key(tensor: &FloatTensor<Self>) -> NodeKey;

    /// Whether gradients flow back through the tensor: a leaf that requires them, or the
    /// result of an op on one (`Tensor::is_require_grad` is true for the leaves only).
    fn is_tracked(tensor: &FloatTensor<Self>) -> bool;
}

impl<I: Backend, C: CheckpointStrategy> CheckpointBackend for Autodiff<I, C> {
    fn node_key(tensor: &FloatTensor<Self>) -> NodeKey {
        NodeKey(tensor.node.id)
    }

    fn is_tracked(tensor: &FloatTensor<Self>) -> bool {
        !tensor.node.requirement.is_none()
    }
}

/// `Acc` above autodiff shares its primitives, nodes included.
impl<A: CheckpointBackend> CheckpointBackend for Acc<A> {
    fn node_key(tensor: &FloatTensor<Self>) -> NodeKey {
        A::node_key(tensor)
    }

    fn is_tracked(tensor: &FloatTensor<Self>) -> bool {
        A::is_tracked(tensor)
    }
}
