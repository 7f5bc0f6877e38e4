//! [`PatchMerging`]: halves the resolution and doubles the channels between stages
//! (timm `PatchMerging`, at the start of stages 1, 2, 3 in timm's current layout).

use burn::module::Module;
use burn::nn::{LayerNorm, LayerNormConfig, Linear};
use burn::tensor::Tensor;
use burn::tensor::backend::Backend;
use burn::tensor::ops::PadMode;

use super::init::linear;

/// Concatenates each 2 × 2 neighbourhood into `4 · dim` channels, normalises, and projects to
/// `out_dim` channels without bias.
#[derive(Module, Debug)]
pub struct PatchMerging<B: Backend> {
    /// Normalises the `4 · dim` concatenated channels.
    pub norm: LayerNorm<B>,
    /// `[4 · dim → out_dim]`, no bias.
    pub reduction: Linear<B>,
}

impl<B: Backend> PatchMerging<B> {
    /// `dim` → `out_dim` channels.
    pub fn new(dim: usize, out_dim: usize, layer_norm_eps: f64, device: &B::Device) -> Self {
        Self {
            norm: LayerNormConfig::new(4 * dim)
                .with_epsilon(layer_norm_eps)
                .init(device),
            reduction: linear(4 * dim, out_dim, false, device),
        }
    }

    /// x: `[batch, h, w, dim]` → `[batch, ⌈h/2⌉, ⌈w/2⌉, out_dim]`; odd maps are padded with a
    /// zero row/column at the bottom/right first.
    ///
    /// The `4 · dim` channels are ordered `(dx, dy, c)`: `x[2i, 2j]`, `x[2i+1, 2j]`,
    /// `x[2i, 2j+1]`, `x[2i+1, 2j+1]`, as timm's `reshape(B, H/2, 2, W/2, 2, C)
    /// .permute(0, 1, 3, 4, 2, 5)` (and the original implementation's `cat([x0, x1, x2, x3])`),
    /// which the weights of `norm` and `reduction` depend on.
    pub fn forward(&self, x: Tensor<B, 4>) -> Tensor<B, 4> {
        let [batch, h, w, dim] = x.dims();
        let x = if h % 2 == 1 || w % 2 == 1 {
            x.pad(
                [(0, 0), (0, h % 2), (0, w % 2), (0, 0)],
                PadMode::Constant(0.0),
            )
        } else {
            x
        };
        let (h, w) = (h.div_ceil(2), w.div_ceil(2));
        let x = x
            .reshape([batch, h, 2, w, 2, dim])
            .permute([0, 1, 3, 4, 2, 5])
            .reshape([batch, h, w, 4 * dim]);
        self.reduction.forward(self.norm.forward(x))
    }
}
