//! [`SwinBlock`]: one Swin Transformer block (timm `SwinTransformerBlock`) and its [`Mlp`].

use burn::module::Module;
use burn::nn::{Dropout, DropoutConfig, LayerNorm, LayerNormConfig, Linear};
use burn::tensor::Tensor;
use burn::tensor::backend::Backend;
use burn::tensor::ops::PadMode;
use burnacc_backend::fused::gelu;

use burnacc_backend::fused;

use super::attention::WindowAttention;
use super::config::{BlockGeometry, SwinConfig};
use super::drop_path::drop_path;
use super::init::linear;
use super::window::{cyclic_shift, shifted_window_mask, window_partition, window_reverse};

/// timm `Mlp`: `fc2(drop(gelu(fc1(x))))`, then dropout; exact (erf) GELU as `nn.GELU`.
#[derive(Module, Debug)]
pub struct Mlp<B: Backend> {
    /// `[dim → hidden]`.
    pub fc1: Linear<B>,
    /// `[hidden → dim]`.
    pub fc2: Linear<B>,
    drop: Dropout,
}

impl<B: Backend> Mlp<B> {
    /// `dim → hidden → dim`, dropout `drop` after the activation and after `fc2`.
    pub fn new(dim: usize, hidden: usize, drop: f64, device: &B::Device) -> Self {
        Self {
            fc1: linear(dim, hidden, true, device),
            fc2: linear(hidden, dim, true, device),
            drop: DropoutConfig::new(drop).init(),
        }
    }

    /// x: `[..., dim]` → `[..., dim]`.
    pub fn forward<const D: usize>(&self, x: Tensor<B, D>) -> Tensor<B, D> {
        let x = self.drop.forward(gelu(self.fc1.forward(x)));
        self.drop.forward(self.fc2.forward(x))
    }
}

/// One Swin Transformer block, pre-norm:
///
/// `x = x + drop_path(SW-MSA(norm1(x)))`, then `x = x + drop_path(mlp(norm2(x)))`,
///
/// where (S)W-MSA shifts the map cyclically by `−shift` (shifted blocks only), pads it with
/// zeros to a multiple of the window, attends inside each window (with the shifted-window mask
/// on shifted blocks), and undoes the padding and the shift.
///
/// The unit for gradient checkpointing: it maps `[batch, h, w, dim]` to the same shape and
/// depends only on its input (and, when training, on the device's random generator).
#[derive(Module, Debug)]
pub struct SwinBlock<B: Backend> {
    /// Normalises the attention branch's input.
    pub norm1: LayerNorm<B>,
    /// Window attention.
    pub attn: WindowAttention<B>,
    /// Normalises the MLP branch's input.
    pub norm2: LayerNorm<B>,
    /// Feed-forward branch.
    pub mlp: Mlp<B>,
    /// Shifted-window mask `[num_windows, n, n]` on shifted blocks: a constant, not a parameter
    /// (timm's non-persistent `attn_mask` buffer).
    attn_mask: Option<Tensor<B, 3>>,
    /// Stochastic depth rate of both branches.
    drop_path: f64,
    resolution_h: usize,
    resolution_w: usize,
    window_h: usize,
    window_w: usize,
    shift_h: usize,
    shift_w: usize,
}

impl<B: Backend> SwinBlock<B> {
    /// Block `block` of stage `stage` of `config`, with stochastic depth rate `drop_path`.
    pub fn new(
        config: &SwinConfig,
        stage: usize,
        block: usize,
        drop_path: f64,
        device: &B::Device,
    ) -> Self {
        let dim = config.stage_dim(stage);
        let geometry = config.block_geometry(stage, block);
        let BlockGeometry {
            resolution,
            window,
            shift,
        } = geometry;
        let norm = || {
            LayerNormConfig::new(dim)
                .with_epsilon(config.layer_norm_eps)
                .init(device)
        };
        let attn_mask = geometry
            .is_shifted()
            .then(|| shifted_window_mask(padded(resolution, window), window, shift, device));
        Self {
            norm1: norm(),
            attn: WindowAttention::new(
                dim,
                config.num_heads[stage],
                window,
                config.qkv_bias,
                config.attn_drop_rate,
                config.proj_drop_rate,
                device,
            ),
            norm2: norm(),
            mlp: Mlp::new(dim, config.mlp_hidden(dim), config.proj_drop_rate, device),
            attn_mask,
            drop_path,
            resolution_h: resolution[0],
            resolution_w: resolution[1],
            window_h: window[0],
            window_w: window[1],
            shift_h: shift[0],
            shift_w: shift[1],
        }
    }

    /// Resolution, window and shift of this block.
    pub fn geometry(&self) -> BlockGeometry {
        BlockGeometry {
            resolution: [self.resolution_h, self.resolution_w],
            window: [self.window_h, self.window_w],
            shift: [self.shift_h, self.shift_w],
        }
    }

    /// Stochastic depth rate of this block.
    pub fn drop_path_rate(&self) -> f64 {
        self.drop_path
    }

    /// x: `[batch, h, w, dim]` → `[batch, h, w, dim]`, with `[h, w]` the resolution the block
    /// was built for.
    pub fn forward(&self, x: Tensor<B, 4>) -> Tensor<B, 4> {
        let [_, h, w, _] = x.dims();
        assert_eq!(
            [h, w],
            [self.resolution_h, self.resolution_w],
            "swin block built for a {}x{} map got {h}x{w}",
            self.resolution_h,
            self.resolution_w
        );
        let attended = self.shifted_window_attention(self.norm1.forward(x.clone()));
        let x = x + drop_path(attended, self.drop_path);
        let mlp = self.mlp.forward(self.norm2.forward(x.clone()));
        x + drop_path(mlp, self.drop_path)
    }

    /// (S)W-MSA on a normalised map (timm `SwinTransformerBlock._attn`).
    ///
    /// x: `[batch, h, w, dim]` → `[batch, h, w, dim]`.
    fn shifted_window_attention(&self, x: Tensor<B, 4>) -> Tensor<B, 4> {
        let geometry = self.geometry();
        let resolution = geometry.resolution;
        let windows = fused::window_process(x.clone(), geometry.window, geometry.shift)
            .unwrap_or_else(|| self.partition(x));
        let attended = self.attn.forward(windows, self.attn_mask.clone());
        fused::window_process_reverse(
            attended.clone(),
            resolution,
            geometry.window,
            geometry.shift,
        )
        .unwrap_or_else(|| self.merge(attended))
    }

    /// Cyclic shift by `−shift` (shifted blocks), zero padding to a multiple of the window,
    /// window partition: `[batch, h, w, dim]` → `[batch · windows, wh · ww, dim]`.
    fn partition(&self, x: Tensor<B, 4>) -> Tensor<B, 3> {
        let [_, h, w, _] = x.dims();
        let geometry = self.geometry();
        let [sh, sw] = geometry.shift.map(|s| s as isize);
        let x = if geometry.is_shifted() {
            cyclic_shift(x, -sh, -sw)
        } else {
            x
        };
        // Zero padding comes after the shift, as in timm; the padded tokens take part in
        // attention as keys (timm does not mask them), so they are kept exactly the same way.
        let [hp, wp] = padded([h, w], geometry.window);
        let x = if [hp, wp] != [h, w] {
            x.pad(
                [(0, 0), (0, hp - h), (0, wp - w), (0, 0)],
                PadMode::Constant(0.0),
            )
        } else {
            x
        };
        window_partition(x, geometry.window)
    }

    /// The inverse of [`Self::partition`]: window merge, crop of the padding, cyclic shift by
    /// `+shift`: `[batch · windows, wh · ww, dim]` → `[batch, h, w, dim]`.
    fn merge(&self, windows: Tensor<B, 3>) -> Tensor<B, 4> {
        let geometry = self.geometry();
        let [h, w] = geometry.resolution;
        let [hp, wp] = padded([h, w], geometry.window);
        let x = window_reverse(windows, geometry.window, [hp, wp]);
        let [batch, _, _, dim] = x.dims();
        let x = if [hp, wp] != [h, w] {
            x.slice([0..batch, 0..h, 0..w, 0..dim])
        } else {
            x
        };
        let [sh, sw] = geometry.shift.map(|s| s as isize);
        if geometry.is_shifted() {
            cyclic_shift(x, sh, sw)
        } else {
            x
        }
    }
}

/// `resolution` rounded up to a multiple of `window` in each direction.
fn padded(resolution: [usize; 2], window: [usize; 2]) -> [usize; 2] {
    [0, 1].map(|d| resolution[d].div_ceil(window[d]) * window[d])
}
