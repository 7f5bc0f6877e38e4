//! ResNets (torchvision's): configuration from the recipe, construction, and the forward
//! passes with checkpointed or probed residual blocks.

use super::super::auto_checkpoint::BlockProbe;
use super::super::batch::ImageBatch;
use super::super::bert_init::PretrainedSummary;
use super::super::classify::{BlockFilter, Classify, ClassifyCheckpointed, bytes_of};
use super::super::init::init_resnet;
use super::ModelFamily;
use crate::recipe::Recipe;
use anyhow::Result;
use burn::tensor::backend::Backend;
use burn::tensor::{Int, Tensor};
use burnacc_checkpoint::{CheckpointBackend, CheckpointTape};
use burnacc_datasets::HostBatch;
use burnacc_models::{ResNet, ResNetConfig};

/// resnet18 … resnet152.
pub struct ResNetFamily;

impl<B: CheckpointBackend> ModelFamily<B> for ResNetFamily {
    type Host = HostBatch;
    type Net = ResNet<B>;
    type Config = ResNetConfig;

    fn config(recipe: &Recipe, classes: usize, channels: usize) -> Result<ResNetConfig> {
        Ok(model_config(recipe, classes, channels))
    }

    fn build(config: &ResNetConfig, device: &B::Device) -> ResNet<B> {
        config.init(device)
    }

    fn init(
        config: &ResNetConfig,
        recipe: &Recipe,
        seed: u64,
        device: &B::Device,
    ) -> Result<(ResNet<B>, Option<PretrainedSummary>)> {
        init_resnet(config, seed, recipe.model.weights.as_deref(), device)
    }

    fn reference_config(config: &ResNetConfig) -> String {
        config.reference_config()
    }
}

/// The ResNet a recipe describes, for `num_classes` outputs and `channels` input channels.
pub fn model_config(recipe: &Recipe, num_classes: usize, channels: usize) -> ResNetConfig {
    let keys = recipe
        .model
        .resnet()
        .expect("the ResNet family is chosen by a ResNet name");
    ResNetConfig::from_name(recipe.model.name.as_str(), num_classes)
        .expect("the recipe schema only admits known model names")
        .with_in_channels(channels)
        .with_base_width(keys.base_width)
        .with_small_input_stem(keys.small_input_stem)
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
