//! [`SwinTransformer`]: stem, stages, final norm and classifier (timm `SwinTransformer`).

use burn::module::Module;
use burn::nn::{Dropout, DropoutConfig, LayerNorm, LayerNormConfig, Linear};
use burn::tensor::Tensor;
use burn::tensor::backend::Backend;

use super::block::SwinBlock;
use super::config::SwinConfig;
use super::init::linear;
use super::patch_embed::PatchEmbed;
use super::stage::SwinStage;

/// timm `ClassifierHead` with average pooling over an NHWC map: `fc(drop(mean_hw(x)))`.
#[derive(Module, Debug)]
pub struct ClassifierHead<B: Backend> {
    /// `[num_features → num_classes]`.
    pub fc: Linear<B>,
    drop: Dropout,
}

impl<B: Backend> ClassifierHead<B> {
    /// x: `[batch, h, w, num_features]` → logits `[batch, num_classes]`.
    pub fn forward(&self, x: Tensor<B, 4>) -> Tensor<B, 2> {
        let [batch, _, _, features] = x.dims();
        let pooled = x.mean_dims(&[1, 2]).reshape([batch, features]);
        self.fc.forward(self.drop.forward(pooled))
    }
}

/// A Swin Transformer, fields named as timm's `SwinTransformer` so that every parameter's path
/// is its timm `state_dict` key (through [`crate::params::torch_key`]).
#[derive(Module, Debug)]
pub struct SwinTransformer<B: Backend> {
    /// Patch embedding (stem).
    pub patch_embed: PatchEmbed<B>,
    /// The stages, `layers.0` … `layers.{n-1}`.
    pub layers: Vec<SwinStage<B>>,
    /// Final LayerNorm over the last stage's channels.
    pub norm: LayerNorm<B>,
    /// Pooling and classifier.
    pub head: ClassifierHead<B>,
}

impl SwinConfig {
    /// Builds the model with timm's initialisation (see `init.rs`).
    ///
    /// Panics with [`SwinConfig::validate`]'s message when the sizes are impossible.
    pub fn init<B: Backend>(&self, device: &B::Device) -> SwinTransformer<B> {
        if let Err(e) = self.validate() {
            panic!("{e}");
        }
        let rates = self.drop_path_rates();
        SwinTransformer {
            patch_embed: PatchEmbed::new(
                self.in_chans,
                self.embed_dim,
                self.patch_size,
                self.layer_norm_eps,
                device,
            ),
            layers: (0..self.num_stages())
                .map(|stage| SwinStage::new(self, stage, &rates[stage], device))
                .collect(),
            norm: LayerNormConfig::new(self.num_features())
                .with_epsilon(self.layer_norm_eps)
                .init(device),
            head: ClassifierHead {
                fc: linear(self.num_features(), self.num_classes, true, device),
                drop: DropoutConfig::new(self.drop_rate).init(),
            },
        }
    }
}

impl<B: Backend> SwinTransformer<B> {
    /// images: `[batch, in_chans, img_size, img_size]` → logits `[batch, num_classes]`.
    ///
    /// Equal to `forward_head(forward_features(images))`, and to
    /// `forward_head(norm(stages(stem(images))))` where each stage is its patch merging followed
    /// by its blocks ([`SwinStage::merge`], [`SwinBlock::forward`]).
    pub fn forward(&self, images: Tensor<B, 4>) -> Tensor<B, 2> {
        self.forward_head(self.forward_features(images))
    }

    /// Patch embedding: images `[batch, in_chans, H, W]` → `[batch, H/p, W/p, embed_dim]`.
    pub fn stem(&self, images: Tensor<B, 4>) -> Tensor<B, 4> {
        self.patch_embed.forward(images)
    }

    /// Stem, every stage, final norm: images → `[batch, h, w, num_features]` (NHWC, the last
    /// stage's resolution).
    pub fn forward_features(&self, images: Tensor<B, 4>) -> Tensor<B, 4> {
        let x = self.stem(images);
        let x = self.layers.iter().fold(x, |x, stage| stage.forward(x));
        self.norm.forward(x)
    }

    /// Average pooling and classifier: `[batch, h, w, num_features]` (normalised) → logits.
    pub fn forward_head(&self, features: Tensor<B, 4>) -> Tensor<B, 2> {
        self.head.forward(features)
    }

    /// Every block in execution order: `layers[0].blocks[0]`, …, `layers[n-1].blocks[last]`.
    /// Between stages the patch merging of the next stage runs first.
    pub fn blocks(&self) -> impl Iterator<Item = &SwinBlock<B>> {
        self.layers.iter().flat_map(|stage| stage.blocks.iter())
    }

    /// Number of output classes.
    pub fn num_classes(&self) -> usize {
        self.head.fc.weight.dims()[1]
    }
}
