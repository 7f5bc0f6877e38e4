//! [`SwinConfig`]: the sizes of a Swin Transformer, its presets, and the per-stage and per-block
//! geometry (resolution, window, shift, drop-path rate) that timm derives from them.

use burn::config::Config;

use crate::error::UnknownModel;

/// Sizes and hyper-parameters of a Swin Transformer, named as the keyword arguments of timm's
/// `SwinTransformer`. The defaults are Swin-T (`swin_tiny_patch4_window7_224`).
///
/// The model is built for one input size, `img_size × img_size`, as timm does by default
/// (`strict_img_size=True`): every block's window, shift and attention mask follow from the
/// resolution its stage runs at (see [`SwinConfig::block_geometry`]).
#[derive(Config, Debug)]
pub struct SwinConfig {
    /// Number of output classes (`head.fc` output features).
    pub num_classes: usize,
    /// Height and width of the input images.
    #[config(default = 224)]
    pub img_size: usize,
    /// Side of the square, non-overlapping patches the stem embeds (stride of `patch_embed.proj`).
    #[config(default = 4)]
    pub patch_size: usize,
    /// Input image channels.
    #[config(default = 3)]
    pub in_chans: usize,
    /// Channels of stage 0; stage `i` has `embed_dim · 2^i`.
    #[config(default = 96)]
    pub embed_dim: usize,
    /// Blocks per stage; its length is the number of stages.
    #[config(default = "vec![2, 2, 6, 2]")]
    pub depths: Vec<usize>,
    /// Attention heads per stage, one entry per stage.
    #[config(default = "vec![3, 6, 12, 24]")]
    pub num_heads: Vec<usize>,
    /// Side of the attention windows (clamped per stage to the stage's resolution).
    #[config(default = 7)]
    pub window_size: usize,
    /// Hidden width of the MLP as a multiple of the block's width.
    #[config(default = 4.0)]
    pub mlp_ratio: f64,
    /// Whether the query/key/value projection has a bias.
    #[config(default = true)]
    pub qkv_bias: bool,
    /// Dropout before the classifier (timm `drop_rate`).
    #[config(default = 0.0)]
    pub drop_rate: f64,
    /// Dropout after the attention projection and in the MLP (timm `proj_drop_rate`).
    #[config(default = 0.0)]
    pub proj_drop_rate: f64,
    /// Dropout on the attention probabilities (timm `attn_drop_rate`).
    #[config(default = 0.0)]
    pub attn_drop_rate: f64,
    /// Stochastic depth rate of the last block; it grows linearly from 0 over all blocks
    /// (timm's default 0.1, which the Swin paper uses for Swin-T; it uses 0.3 for Swin-S and
    /// 0.5 for Swin-B when training from scratch).
    #[config(default = 0.1)]
    pub drop_path_rate: f64,
    /// ε of every LayerNorm (PyTorch's `nn.LayerNorm` default).
    #[config(default = 1e-5)]
    pub layer_norm_eps: f64,
}

/// A configuration that cannot build a model; the message names the field and its value.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SwinConfigError {
    /// `depths` and `num_heads` must have one entry per stage.
    #[error("swin: depths has {depths} stages but num_heads has {heads}; give one entry per stage")]
    StageCount {
        /// `depths.len()`.
        depths: usize,
        /// `num_heads.len()`.
        heads: usize,
    },
    /// A size that must be positive is zero.
    #[error("swin: {field} must be at least 1")]
    Zero {
        /// The field.
        field: &'static str,
    },
    /// A stage's width is not a multiple of its number of heads.
    #[error(
        "swin: stage {stage} has {dim} channels, not a multiple of num_heads[{stage}] = {heads}"
    )]
    Heads {
        /// The stage.
        stage: usize,
        /// Its channels, `embed_dim · 2^stage`.
        dim: usize,
        /// Its heads.
        heads: usize,
    },
    /// The image is smaller than one patch.
    #[error("swin: img_size {img_size} is smaller than patch_size {patch_size}")]
    ImageSize {
        /// `img_size`.
        img_size: usize,
        /// `patch_size`.
        patch_size: usize,
    },
    /// A probability is outside `[0, 1]`.
    #[error("swin: {field} = {value} is not a probability in [0, 1]")]
    Probability {
        /// The field.
        field: &'static str,
        /// Its value.
        value: f64,
    },
}

/// Where one block runs: its input resolution, window and cyclic shift, each `[height, width]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockGeometry {
    /// Resolution of the block's input and output map, `[h, w]`.
    pub resolution: [usize; 2],
    /// Attention window, `[wh, ww]`: the configured window, clamped to the resolution.
    pub window: [usize; 2],
    /// Cyclic shift, `[sh, sw]`: `window_size / 2` on odd blocks, 0 on even blocks and wherever
    /// the whole resolution fits in one window (shifting would then only permute the tokens of
    /// that window).
    pub shift: [usize; 2],
}

impl BlockGeometry {
    /// True when the block runs shifted windows (and so needs an attention mask).
    pub fn is_shifted(&self) -> bool {
        self.shift != [0, 0]
    }
}

impl SwinConfig {
    /// Model names accepted by [`SwinConfig::from_name`] (timm's names).
    pub const NAMES: &'static [&'static str] = &[
        "swin_tiny_patch4_window7_224",
        "swin_small_patch4_window7_224",
        "swin_base_patch4_window7_224",
    ];

    /// Swin-T: embed 96, depths `[2, 2, 6, 2]`, heads `[3, 6, 12, 24]`; 28,288,354 parameters
    /// at 1000 classes.
    pub fn swin_tiny(num_classes: usize) -> Self {
        Self::new(num_classes)
    }

    /// Swin-S: embed 96, depths `[2, 2, 18, 2]`, heads `[3, 6, 12, 24]`; 49,606,258 parameters
    /// at 1000 classes.
    pub fn swin_small(num_classes: usize) -> Self {
        Self::new(num_classes).with_depths(vec![2, 2, 18, 2])
    }

    /// Swin-B: embed 128, depths `[2, 2, 18, 2]`, heads `[4, 8, 16, 32]`; 87,768,224
    /// parameters at 1000 classes.
    pub fn swin_base(num_classes: usize) -> Self {
        Self::new(num_classes)
            .with_embed_dim(128)
            .with_depths(vec![2, 2, 18, 2])
            .with_num_heads(vec![4, 8, 16, 32])
    }

    /// The configuration timm calls `name` (see [`SwinConfig::NAMES`]).
    pub fn from_name(name: &str, num_classes: usize) -> Result<Self, UnknownModel> {
        match name {
            "swin_tiny_patch4_window7_224" => Ok(Self::swin_tiny(num_classes)),
            "swin_small_patch4_window7_224" => Ok(Self::swin_small(num_classes)),
            "swin_base_patch4_window7_224" => Ok(Self::swin_base(num_classes)),
            _ => Err(UnknownModel {
                name: name.to_string(),
                valid: Self::NAMES,
            }),
        }
    }

    /// Checks that the sizes can build a model.
    pub fn validate(&self) -> Result<(), SwinConfigError> {
        if self.depths.len() != self.num_heads.len() {
            return Err(SwinConfigError::StageCount {
                depths: self.depths.len(),
                heads: self.num_heads.len(),
            });
        }
        let sizes = [
            ("num_classes", self.num_classes),
            ("img_size", self.img_size),
            ("patch_size", self.patch_size),
            ("in_chans", self.in_chans),
            ("embed_dim", self.embed_dim),
            ("window_size", self.window_size),
            ("depths.len()", self.depths.len()),
        ];
        if let Some((field, _)) = sizes.iter().find(|(_, v)| *v == 0) {
            return Err(SwinConfigError::Zero { field });
        }
        if self.img_size < self.patch_size {
            return Err(SwinConfigError::ImageSize {
                img_size: self.img_size,
                patch_size: self.patch_size,
            });
        }
        for (stage, &heads) in self.num_heads.iter().enumerate() {
            let dim = self.stage_dim(stage);
            if heads == 0 || !dim.is_multiple_of(heads) {
                return Err(SwinConfigError::Heads { stage, dim, heads });
            }
        }
        let probabilities = [
            ("drop_rate", self.drop_rate),
            ("proj_drop_rate", self.proj_drop_rate),
            ("attn_drop_rate", self.attn_drop_rate),
            ("drop_path_rate", self.drop_path_rate),
        ];
        if let Some((field, value)) = probabilities.iter().find(|(_, p)| !(0.0..=1.0).contains(p)) {
            return Err(SwinConfigError::Probability {
                field,
                value: *value,
            });
        }
        Ok(())
    }

    /// Number of stages.
    pub fn num_stages(&self) -> usize {
        self.depths.len()
    }

    /// Channels of stage `stage`: `embed_dim · 2^stage`.
    pub fn stage_dim(&self, stage: usize) -> usize {
        self.embed_dim << stage
    }

    /// Channels entering the final norm and the classifier (those of the last stage).
    pub fn num_features(&self) -> usize {
        self.stage_dim(self.num_stages() - 1)
    }

    /// Side of the patch grid the stem produces: `img_size / patch_size` (rounded down, as the
    /// strided convolution does).
    pub fn grid_size(&self) -> usize {
        self.img_size / self.patch_size
    }

    /// Resolution `[h, w]` the blocks of stage `stage` run at: the patch grid for stage 0, and
    /// each later stage halves it, rounding up (patch merging pads odd maps).
    pub fn stage_resolution(&self, stage: usize) -> [usize; 2] {
        let side = (0..stage).fold(self.grid_size(), |side, _| side.div_ceil(2));
        [side, side]
    }

    /// Window, shift and resolution of block `block` of stage `stage`, as timm's
    /// `SwinTransformerBlock._calc_window_shift`: odd blocks shift by `window_size / 2`; in each
    /// direction where the resolution is no larger than the window, the window shrinks to the
    /// resolution and the shift is 0.
    pub fn block_geometry(&self, stage: usize, block: usize) -> BlockGeometry {
        let resolution = self.stage_resolution(stage);
        let target_shift = if block % 2 == 1 {
            self.window_size / 2
        } else {
            0
        };
        let window = resolution.map(|r| r.min(self.window_size));
        let shift = [0, 1].map(|d| {
            if resolution[d] <= window[d] {
                0
            } else {
                target_shift
            }
        });
        BlockGeometry {
            resolution,
            window,
            shift,
        }
    }

    /// Stochastic depth rate of every block, per stage: `drop_path_rate · k / (n − 1)` for the
    /// `k`-th of `n` blocks counted over all stages (timm's
    /// `calculate_drop_path_rates(rate, depths, stagewise=True)`, a `linspace` split by stage).
    pub fn drop_path_rates(&self) -> Vec<Vec<f64>> {
        let total: usize = self.depths.iter().sum();
        let rate = |k: usize| {
            if total <= 1 {
                0.0
            } else {
                self.drop_path_rate * k as f64 / (total - 1) as f64
            }
        };
        let mut k = 0;
        self.depths
            .iter()
            .map(|&depth| {
                (0..depth)
                    .map(|_| {
                        k += 1;
                        rate(k - 1)
                    })
                    .collect()
            })
            .collect()
    }

    /// Hidden width of the MLP of a block with `dim` channels: `int(dim · mlp_ratio)`.
    pub fn mlp_hidden(&self, dim: usize) -> usize {
        (dim as f64 * self.mlp_ratio) as usize
    }
}
