//! What the trainer needs from a model: logits and labels for a host batch, with or without
//! checkpointed blocks. ResNets read image batches, BERTs text batches.

use super::batch::{upload, upload_text};
use burn::module::Module;
use burn::tensor::backend::Backend;
use burn::tensor::{Int, Tensor};
use burnacc_checkpoint::{CheckpointBackend, CheckpointTape};
use burnacc_datasets::HostBatch;
use burnacc_datasets::text::TextBatch;
use burnacc_models::{BertForSequenceClassification, BertInput, ResNet};

/// A classifier of host batches `H`.
pub trait Classify<B: Backend, H>: Module<B> {
    /// Uploads `batch` and runs the model: logits `[samples, classes]`, labels `[samples]`.
    fn classify(&self, batch: H, device: &B::Device) -> (Tensor<B, 2>, Tensor<B, 1, Int>);
}

/// A classifier whose blocks (residual blocks, encoder layers) can be checkpointed.
pub trait ClassifyCheckpointed<B: CheckpointBackend, H>: Classify<B, H> {
    /// [`Classify::classify`] with every block checkpointed on `tape`.
    fn classify_checkpointed(
        &self,
        batch: H,
        device: &B::Device,
        tape: &mut CheckpointTape<B>,
    ) -> (Tensor<B, 2>, Tensor<B, 1, Int>);
}

impl<B: Backend> Classify<B, HostBatch> for ResNet<B> {
    fn classify(&self, batch: HostBatch, device: &B::Device) -> (Tensor<B, 2>, Tensor<B, 1, Int>) {
        let (images, labels) = upload::<B>(batch, device);
        (self.forward(images), labels)
    }
}

impl<B: CheckpointBackend> ClassifyCheckpointed<B, HostBatch> for ResNet<B> {
    fn classify_checkpointed(
        &self,
        batch: HostBatch,
        device: &B::Device,
        tape: &mut CheckpointTape<B>,
    ) -> (Tensor<B, 2>, Tensor<B, 1, Int>) {
        let (images, labels) = upload::<B>(batch, device);
        (forward_checkpointed(self, images, tape), labels)
    }
}

impl<B: Backend> Classify<B, TextBatch> for BertForSequenceClassification<B> {
    fn classify(&self, batch: TextBatch, device: &B::Device) -> (Tensor<B, 2>, Tensor<B, 1, Int>) {
        let (input, labels) = upload_text::<B>(batch, device);
        (self.forward(&input), labels)
    }
}

impl<B: CheckpointBackend> ClassifyCheckpointed<B, TextBatch> for BertForSequenceClassification<B> {
    /// Every encoder layer checkpointed (the recipe check demands dropout 0: recomputed layers
    /// would draw new masks).
    fn classify_checkpointed(
        &self,
        batch: TextBatch,
        device: &B::Device,
        tape: &mut CheckpointTape<B>,
    ) -> (Tensor<B, 2>, Tensor<B, 1, Int>) {
        let (input, labels) = upload_text::<B>(batch, device);
        (bert_forward_checkpointed(self, &input, tape), labels)
    }
}

/// BERT's forward pass with every encoder layer checkpointed on `tape`.
///
/// input: `[rows, seq]` → logits `[samples, classes]`.
pub fn bert_forward_checkpointed<B: CheckpointBackend>(
    model: &BertForSequenceClassification<B>,
    input: &BertInput<B>,
    tape: &mut CheckpointTape<B>,
) -> Tensor<B, 2> {
    let mut x = model.bert.embed(input);
    for layer in &model.bert.encoder.layer {
        let bias = input.attention_bias.clone();
        x = tape.checkpoint(layer, x, move |layer, x| layer.forward(x, bias.clone()));
    }
    model.head(x, input)
}

/// ResNet's forward pass with every residual block checkpointed on `tape`.
///
/// images: `[batch, channels, height, width]` → logits `[batch, classes]`.
pub fn forward_checkpointed<B: CheckpointBackend>(
    model: &ResNet<B>,
    images: Tensor<B, 4>,
    tape: &mut CheckpointTape<B>,
) -> Tensor<B, 2> {
    let mut x = model.stem(images);
    for block in model.blocks() {
        x = tape.checkpoint(block, x, |block, x| block.forward(x));
    }
    model.head(x)
}
