//! Swin Transformers (timm's): configuration from the recipe, construction, and the forward
//! passes with checkpointed or probed blocks.

use super::super::auto_checkpoint::BlockProbe;
use super::super::batch::ImageBatch;
use super::super::bert_init::PretrainedSummary;
use super::super::classify::{BlockFilter, Classify, ClassifyCheckpointed, bytes_of};
use super::super::init::init_swin;
use super::ModelFamily;
use crate::recipe::Recipe;
use anyhow::Result;
use burn::tensor::backend::Backend;
use burn::tensor::{Int, Tensor};
use burnacc_checkpoint::{CheckpointBackend, CheckpointTape};
use burnacc_datasets::HostBatch;
use burnacc_models::{SwinConfig, SwinTransformer};

/// swin-t, swin-s, swin-b.
pub struct SwinFamily;

impl<B: CheckpointBackend> ModelFamily<B> for SwinFamily {
    type Host = HostBatch;
    type Net = SwinTransformer<B>;
    type Config = SwinConfig;

    fn config(recipe: &Recipe, classes: usize, channels: usize) -> Result<SwinConfig> {
        swin_model_config(recipe, classes, channels)
    }

    fn build(config: &SwinConfig, device: &B::Device) -> SwinTransformer<B> {
        config.init(device)
    }

    fn init(
        config: &SwinConfig,
        recipe: &Recipe,
        seed: u64,
        device: &B::Device,
    ) -> Result<(SwinTransformer<B>, Option<PretrainedSummary>)> {
        init_swin(config, seed, recipe.model.weights.as_deref(), device)
    }

    fn reference_config(config: &SwinConfig) -> String {
        config.reference_config()
    }
}

/// The Swin Transformer a recipe describes (`model.name` swin-t/s/b and the Swin keys of
/// `[model]`), for `num_classes` outputs and `channels` input channels at `data.image_size`.
pub fn swin_model_config(
    recipe: &Recipe,
    num_classes: usize,
    channels: usize,
) -> Result<SwinConfig> {
    crate::recipe::swin_config(recipe, num_classes, channels)
        .map_err(|(key, message)| anyhow::anyhow!("key `{key}`: {message}"))
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
