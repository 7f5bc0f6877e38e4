//! [`WindowAttention`]: multi-head self-attention inside one window, with a learned relative
//! position bias (timm `WindowAttention`, W-MSA and SW-MSA).

use burn::module::{Initializer, Module, Param};
use burn::nn::{Dropout, DropoutConfig, Linear};
use burn::tensor::activation::softmax;
use burn::tensor::backend::Backend;
use burn::tensor::{Int, Tensor};

use burnacc_backend::fused;

use super::init::{INIT_STD, linear};
use super::window::relative_position_index;

/// Window attention: `softmax(q·kᵀ/√d + B + M) · v`, then a projection, where `B` is the
/// relative position bias of the window and `M` the shifted-window mask (if any).
///
/// Softmax runs in the scores' dtype, as timm's non-fused path does; where a trainer routes
/// burnacc's fused window softmax (`[kernels] swin_fmha`), bias, mask and softmax are one op
/// computed in f32 and stored in the scores' dtype.
#[derive(Module, Debug)]
pub struct WindowAttention<B: Backend> {
    /// One learned bias per head for every relative offset inside a window,
    /// `[(2wh − 1) · (2ww − 1), heads]` (timm initialises it N(0, 0.02)).
    pub relative_position_bias_table: Param<Tensor<B, 2>>,
    /// `[dim → 3 · dim]`, output laid out `[q | k | v]`, each `[heads, head_dim]`.
    pub qkv: Linear<B>,
    /// `[dim → dim]`.
    pub proj: Linear<B>,
    /// Row of the table for every (query, key) pair, `[n · n]`: a constant, not a parameter
    /// (timm's non-persistent `relative_position_index` buffer).
    relative_position_index: Tensor<B, 1, Int>,
    attn_drop: Dropout,
    proj_drop: Dropout,
    num_heads: usize,
    window_area: usize,
}

impl<B: Backend> WindowAttention<B> {
    /// Attention over `dim` channels in `num_heads` heads for windows `window = [wh, ww]`,
    /// initialised as timm (`Linear` weights N(0, 0.02), biases 0).
    pub fn new(
        dim: usize,
        num_heads: usize,
        window: [usize; 2],
        qkv_bias: bool,
        attn_drop: f64,
        proj_drop: f64,
        device: &B::Device,
    ) -> Self {
        let [wh, ww] = window;
        let offsets = (2 * wh - 1) * (2 * ww - 1);
        Self {
            relative_position_bias_table: Initializer::Normal {
                mean: 0.0,
                std: INIT_STD,
            }
            .init([offsets, num_heads], device),
            qkv: linear(dim, 3 * dim, qkv_bias, device),
            proj: linear(dim, dim, true, device),
            relative_position_index: relative_position_index(window, device),
            attn_drop: DropoutConfig::new(attn_drop).init(),
            proj_drop: DropoutConfig::new(proj_drop).init(),
            num_heads,
            window_area: wh * ww,
        }
    }

    /// Number of heads.
    pub fn num_heads(&self) -> usize {
        self.num_heads
    }

    /// The relative position bias of one window, `[heads, n, n]` (timm `_get_rel_pos_bias`):
    /// the table's rows gathered by the index.
    pub fn relative_position_bias(&self) -> Tensor<B, 3> {
        let n = self.window_area;
        self.relative_position_bias_table
            .val()
            .select(0, self.relative_position_index.clone())
            .reshape([n, n, self.num_heads])
            .permute([2, 0, 1])
    }

    /// `scores + B + M`: the relative position bias of the window and, on shifted blocks, the
    /// mask of each window (`mask: [num_windows, n, n]`, repeated over the images).
    ///
    /// scores: `[windows, heads, n, n]` → same shape.
    fn biased_scores(&self, scores: Tensor<B, 4>, mask: Option<Tensor<B, 3>>) -> Tensor<B, 4> {
        let [windows, heads, n, _] = scores.dims();
        let scores = scores
            + self
                .relative_position_bias()
                .unsqueeze_dim::<4>(0)
                .expand([windows, heads, n, n]);
        match mask {
            Some(mask) => {
                let num_windows = mask.dims()[0];
                let batch = windows / num_windows;
                let mask = mask.reshape([1, num_windows, 1, n, n]).expand([
                    batch,
                    num_windows,
                    heads,
                    n,
                    n,
                ]);
                (scores.reshape([batch, num_windows, heads, n, n]) + mask)
                    .reshape([windows, heads, n, n])
            }
            None => scores,
        }
    }

    /// x: `[windows, n, dim]` (`windows = batch · num_windows`, images outermost, as
    /// [`super::window_partition`] orders them), mask: `[num_windows, n, n]` or `None`
    /// → `[windows, n, dim]`.
    pub fn forward(&self, x: Tensor<B, 3>, mask: Option<Tensor<B, 3>>) -> Tensor<B, 3> {
        let [windows, n, dim] = x.dims();
        let heads = self.num_heads;
        let head_dim = dim / heads;
        // [windows, n, 3·dim] → [3, windows, heads, n, head_dim]
        let qkv = self
            .qkv
            .forward(x)
            .reshape([windows, n, 3, heads, head_dim])
            .permute([2, 0, 3, 1, 4]);
        let part = |i: usize| {
            qkv.clone()
                .narrow(0, i, 1)
                .reshape([windows, heads, n, head_dim])
        };
        let (q, k, v) = (part(0), part(1), part(2));

        // timm scales q before the product (`q = q * self.scale`), with scale = head_dim^-0.5.
        let q = q.mul_scalar((head_dim as f64).powf(-0.5));
        let scores = q.matmul(k.swap_dims(2, 3));
        let probs = fused::window_softmax(
            scores.clone(),
            self.relative_position_bias_table.val(),
            self.relative_position_index.clone(),
            mask.clone(),
        )
        .unwrap_or_else(|| softmax(self.biased_scores(scores, mask), 3));
        let probs = self.attn_drop.forward(probs);
        let context = probs
            .matmul(v)
            .swap_dims(1, 2)
            .reshape([windows, n, heads * head_dim]);
        self.proj_drop.forward(self.proj.forward(context))
    }
}
