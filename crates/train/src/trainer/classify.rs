//! What the trainer needs from a model: logits and labels for a host batch, with or without
//! checkpointed blocks, and a forward pass that reports each block to a probe (for
//! `[checkpoint] mode = "auto"`). Each model family implements them (`family/`).

use super::auto_checkpoint::BlockProbe;
use super::batch::Upload;
use burn::module::Module;
use burn::tensor::backend::Backend;
use burn::tensor::{Int, Tensor};
use burnacc_checkpoint::{CheckpointBackend, CheckpointTape};

/// A classifier of host batches `H`, once they are on the device.
pub trait Classify<B: Backend, H: Upload<B>>: Module<B> {
    /// Runs the model on an uploaded batch: logits `[samples, classes]`, labels `[samples]`.
    fn classify(&self, batch: H::OnDevice) -> (Tensor<B, 2>, Tensor<B, 1, Int>);
}

/// Which blocks a forward pass checkpoints, by block index.
pub type BlockFilter<'a> = &'a dyn Fn(usize) -> bool;

/// A classifier whose blocks (residual blocks, encoder layers) can be checkpointed.
pub trait ClassifyCheckpointed<B: CheckpointBackend, H: Upload<B>>: Classify<B, H> {
    /// [`Classify::classify`] with the blocks `checkpoint` selects checkpointed on `tape`.
    fn classify_checkpointed(
        &self,
        batch: H::OnDevice,
        tape: &mut CheckpointTape<B>,
        checkpoint: BlockFilter,
    ) -> (Tensor<B, 2>, Tensor<B, 1, Int>);

    /// [`Classify::classify`] with `probe` told when each block starts and ends: the logits.
    fn classify_probed(&self, batch: H::OnDevice, probe: &mut dyn BlockProbe) -> Tensor<B, 2>;
}

/// Bytes of a tensor's elements in its dtype.
pub(super) fn bytes_of<B: Backend, const D: usize>(x: &Tensor<B, D>) -> u64 {
    (x.shape().num_elements() * x.dtype().size()) as u64
}
