//! [`SwinStage`]: optional patch merging followed by a stack of blocks (timm
//! `SwinTransformerStage`).

use burn::module::Module;
use burn::tensor::Tensor;
use burn::tensor::backend::Backend;

use super::block::SwinBlock;
use super::config::SwinConfig;
use super::patch_merging::PatchMerging;

/// One stage. In timm's current layout the patch merging sits at the *start* of stages
/// 1, 2, 3 (`layers.{i}.downsample`); stage 0 has none. (The original implementation put it at
/// the end of stages 0, 1, 2; timm renames such checkpoints when loading them.)
#[derive(Module, Debug)]
pub struct SwinStage<B: Backend> {
    /// `[batch, h, w, dim/2] → [batch, ⌈h/2⌉, ⌈w/2⌉, dim]`; `None` for stage 0.
    pub downsample: Option<PatchMerging<B>>,
    /// The blocks, alternating regular (even) and shifted (odd) windows.
    pub blocks: Vec<SwinBlock<B>>,
}

impl<B: Backend> SwinStage<B> {
    /// Stage `stage` of `config`; `drop_path` holds one stochastic depth rate per block.
    pub fn new(config: &SwinConfig, stage: usize, drop_path: &[f64], device: &B::Device) -> Self {
        let dim = config.stage_dim(stage);
        let downsample =
            (stage > 0).then(|| PatchMerging::new(dim / 2, dim, config.layer_norm_eps, device));
        let blocks = (0..config.depths[stage])
            .map(|block| SwinBlock::new(config, stage, block, drop_path[block], device))
            .collect();
        Self { downsample, blocks }
    }

    /// Patch merging (if any) alone: `[batch, h, w, c] → [batch, ⌈h/2⌉, ⌈w/2⌉, 2c]`, or `x`.
    pub fn merge(&self, x: Tensor<B, 4>) -> Tensor<B, 4> {
        match &self.downsample {
            Some(merge) => merge.forward(x),
            None => x,
        }
    }

    /// x: the previous stage's output `[batch, h, w, c]` (the stem's for stage 0) →
    /// `[batch, h', w', dim]` with `[h', w']` this stage's resolution.
    ///
    /// Equal to `blocks.fold(merge(x), |x, b| b.forward(x))`.
    pub fn forward(&self, x: Tensor<B, 4>) -> Tensor<B, 4> {
        let x = self.merge(x);
        self.blocks.iter().fold(x, |x, block| block.forward(x))
    }
}
