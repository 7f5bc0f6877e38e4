//! What the trainer needs from a model: logits and labels for a host batch, with or without
//! checkpointed blocks, and a forward pass that reports each block to a probe (for
//! `[checkpoint] mode = "auto"`). ResNets and Swin Transformers read image batches, BERTs text
//! batches.

use super::auto_checkpoint::BlockProbe;
use super::batch::{ImageBatch, TextInputBatch, Upload};
use burn::module::Module;
use burn::tensor::backend::Backend;
use burn::tensor::{Int, Tensor};
use burnacc_checkpoint::{CheckpointBackend, CheckpointTape};
use burnacc_datasets::HostBatch;
use burnacc_datasets::text::TextBatch;
use burnacc_models::{BertForSequenceClassification, BertInput, ResNet, SwinTransformer};

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

impl<B: Backend> Classify<B, HostBatch> for ResNet<B> {
    fn classify(&self, batch: ImageBatch<B>) -> (Tensor<B, 2>, Tensor<B, 1, Int>) {
        (self.forward(batch.images), batch.labels)
    }
}

impl<B: CheckpointBackend> ClassifyCheckpointed<B, HostBatch> for ResNet<B> {
    fn classify_checkpointed(
        &self,
        batch: ImageBatch<B>,
        tape: &mut CheckpointTape<B>,
        checkpoint: BlockFilter,
    ) -> (Tensor<B, 2>, Tensor<B, 1, Int>) {
        (
            forward_selected(self, batch.images, tape, checkpoint),
            batch.labels,
        )
    }

    fn classify_probed(&self, batch: ImageBatch<B>, probe: &mut dyn BlockProbe) -> Tensor<B, 2> {
        forward_probed(self, batch.images, probe)
    }
}

impl<B: Backend> Classify<B, HostBatch> for SwinTransformer<B> {
    fn classify(&self, batch: ImageBatch<B>) -> (Tensor<B, 2>, Tensor<B, 1, Int>) {
        (self.forward(batch.images), batch.labels)
    }
}

impl<B: CheckpointBackend> ClassifyCheckpointed<B, HostBatch> for SwinTransformer<B> {
    /// Checkpointed Swin blocks (stochastic-depth draws are replayed on recompute by the
    /// step's tape).
    fn classify_checkpointed(
        &self,
        batch: ImageBatch<B>,
        tape: &mut CheckpointTape<B>,
        checkpoint: BlockFilter,
    ) -> (Tensor<B, 2>, Tensor<B, 1, Int>) {
        (
            swin_forward_selected(self, batch.images, tape, checkpoint),
            batch.labels,
        )
    }

    fn classify_probed(&self, batch: ImageBatch<B>, probe: &mut dyn BlockProbe) -> Tensor<B, 2> {
        swin_forward_probed(self, batch.images, probe)
    }
}

impl<B: Backend> Classify<B, TextBatch> for BertForSequenceClassification<B> {
    fn classify(&self, batch: TextInputBatch<B>) -> (Tensor<B, 2>, Tensor<B, 1, Int>) {
        (self.forward(&batch.input), batch.labels)
    }
}

impl<B: CheckpointBackend> ClassifyCheckpointed<B, TextBatch> for BertForSequenceClassification<B> {
    /// Checkpointed encoder layers (dropout masks are replayed on recompute by the step's
    /// tape).
    fn classify_checkpointed(
        &self,
        batch: TextInputBatch<B>,
        tape: &mut CheckpointTape<B>,
        checkpoint: BlockFilter,
    ) -> (Tensor<B, 2>, Tensor<B, 1, Int>) {
        (
            bert_forward_selected(self, &batch.input, tape, checkpoint),
            batch.labels,
        )
    }

    fn classify_probed(
        &self,
        batch: TextInputBatch<B>,
        probe: &mut dyn BlockProbe,
    ) -> Tensor<B, 2> {
        bert_forward_probed(self, &batch.input, probe)
    }
}

/// Bytes of a tensor's elements in its dtype.
fn bytes_of<B: Backend, const D: usize>(x: &Tensor<B, D>) -> u64 {
    (x.shape().num_elements() * x.dtype().size()) as u64
}

/// ResNet's forward pass with every residual block checkpointed on `tape`.
///
/// images: `[batch, channels, height, width]` → logits `[batch, classes]`.
pub fn forward_checkpointed<B: CheckpointBackend>(
    model: &ResNet<B>,
    images: Tensor<B, 4>,
    tape: &mut CheckpointTape<B>,
) -> Tensor<B, 2> {
    forward_selected(model, images, tape, &|_| true)
}

/// ResNet's forward pass with the residual blocks `checkpoint` selects checkpointed on `tape`.
pub fn forward_selected<B: CheckpointBackend>(
    model: &ResNet<B>,
    images: Tensor<B, 4>,
    tape: &mut CheckpointTape<B>,
    checkpoint: BlockFilter,
) -> Tensor<B, 2> {
    let mut x = model.stem(images);
    for (i, block) in model.blocks().enumerate() {
        x = if checkpoint(i) {
            tape.checkpoint(block, x, |block, x| block.forward(x))
        } else {
            tape.unchecked(block, x, |block, x| block.forward(x))
        };
    }
    model.head(x)
}

/// ResNet's forward pass with `probe` around each residual block: the logits.
pub fn forward_probed<B: Backend>(
    model: &ResNet<B>,
    images: Tensor<B, 4>,
    probe: &mut dyn BlockProbe,
) -> Tensor<B, 2> {
    let mut x = model.stem(images);
    for block in model.blocks() {
        probe.before_block(bytes_of(&x));
        x = block.forward(x);
        probe.after_block();
    }
    model.head(x)
}

/// Swin's forward pass with the blocks `checkpoint` selects checkpointed on `tape`; blocks are
/// counted over all stages in execution order ([`SwinTransformer::blocks`]). The patch
/// merging at the start of stages 1, 2, 3 runs outside the blocks, never checkpointed.
///
/// images: `[batch, channels, height, width]` → logits `[batch, classes]`.
pub fn swin_forward_selected<B: CheckpointBackend>(
    model: &SwinTransformer<B>,
    images: Tensor<B, 4>,
    tape: &mut CheckpointTape<B>,
    checkpoint: BlockFilter,
) -> Tensor<B, 2> {
    let mut x = model.stem(images);
    let mut i = 0;
    for stage in &model.layers {
        x = stage.merge(x);
        for block in &stage.blocks {
            x = if checkpoint(i) {
                tape.checkpoint(block, x, |block, x| block.forward(x))
            } else {
                tape.unchecked(block, x, |block, x| block.forward(x))
            };
            i += 1;
        }
    }
    model.forward_head(model.norm.forward(x))
}

/// Swin's forward pass with `probe` around each block: the logits.
pub fn swin_forward_probed<B: Backend>(
    model: &SwinTransformer<B>,
    images: Tensor<B, 4>,
    probe: &mut dyn BlockProbe,
) -> Tensor<B, 2> {
    let mut x = model.stem(images);
    for stage in &model.layers {
        x = stage.merge(x);
        for block in &stage.blocks {
            probe.before_block(bytes_of(&x));
            x = block.forward(x);
            probe.after_block();
        }
    }
    model.forward_head(model.norm.forward(x))
}

/// BERT's forward pass with every encoder layer checkpointed on `tape`.
///
/// input: `[rows, seq]` → logits `[samples, classes]`.
pub fn bert_forward_checkpointed<B: CheckpointBackend>(
    model: &BertForSequenceClassification<B>,
    input: &BertInput<B>,
    tape: &mut CheckpointTape<B>,
) -> Tensor<B, 2> {
    bert_forward_selected(model, input, tape, &|_| true)
}

/// BERT's forward pass with the encoder layers `checkpoint` selects checkpointed on `tape`.
pub fn bert_forward_selected<B: CheckpointBackend>(
    model: &BertForSequenceClassification<B>,
    input: &BertInput<B>,
    tape: &mut CheckpointTape<B>,
    checkpoint: BlockFilter,
) -> Tensor<B, 2> {
    let mut x = model.bert.embed(input);
    for (i, layer) in model.bert.encoder.layer.iter().enumerate() {
        let bias = input.attention_bias.clone();
        x = if checkpoint(i) {
            tape.checkpoint(layer, x, move |layer, x| layer.forward(x, bias.clone()))
        } else {
            tape.unchecked(layer, x, |layer, x| layer.forward(x, bias))
        };
    }
    model.head(x, input)
}

/// BERT's forward pass with `probe` around each encoder layer: the logits.
pub fn bert_forward_probed<B: Backend>(
    model: &BertForSequenceClassification<B>,
    input: &BertInput<B>,
    probe: &mut dyn BlockProbe,
) -> Tensor<B, 2> {
    let mut x = model.bert.embed(input);
    for layer in &model.bert.encoder.layer {
        probe.before_block(bytes_of(&x));
        x = layer.forward(x, input.attention_bias.clone());
        probe.after_block();
    }
    model.head(x, input)
}
