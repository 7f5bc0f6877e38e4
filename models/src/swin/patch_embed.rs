//! [`PatchEmbed`]: the stem, a strided convolution over non-overlapping patches and a LayerNorm
//! (timm `PatchEmbed` with `output_fmt='NHWC'` and a norm layer, as Swin builds it).

use burn::module::Module;
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::{LayerNorm, LayerNormConfig};
use burn::tensor::Tensor;
use burn::tensor::backend::Backend;

/// `norm(proj(x))` with `proj` a `patch × patch` convolution of stride `patch`.
#[derive(Module, Debug)]
pub struct PatchEmbed<B: Backend> {
    /// `[embed_dim, in_chans, patch, patch]` convolution with bias.
    pub proj: Conv2d<B>,
    /// Normalises each patch embedding.
    pub norm: LayerNorm<B>,
}

impl<B: Backend> PatchEmbed<B> {
    /// `in_chans` → `embed_dim` channels over `patch × patch` patches; the convolution keeps
    /// PyTorch's default initialisation (Burn's default equals it).
    pub fn new(
        in_chans: usize,
        embed_dim: usize,
        patch: usize,
        layer_norm_eps: f64,
        device: &B::Device,
    ) -> Self {
        Self {
            proj: Conv2dConfig::new([in_chans, embed_dim], [patch, patch])
                .with_stride([patch, patch])
                .init(device),
            norm: LayerNormConfig::new(embed_dim)
                .with_epsilon(layer_norm_eps)
                .init(device),
        }
    }

    /// images: `[batch, in_chans, H, W]` → `[batch, H/patch, W/patch, embed_dim]` (NHWC; sizes
    /// rounded down, as the strided convolution does).
    pub fn forward(&self, images: Tensor<B, 4>) -> Tensor<B, 4> {
        let x = self.proj.forward(images).permute([0, 2, 3, 1]);
        self.norm.forward(x)
    }
}
