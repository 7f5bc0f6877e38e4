//! Swin Transformer (Swin-T/S/B and reduced sizes), structured and named as timm.
//!
//! Paper: Z. Liu, Y. Lin, Y. Cao, H. Hu, Y. Wei, Z. Zhang, S. Lin, B. Guo, "Swin Transformer:
//! Hierarchical Vision Transformer using Shifted Windows", ICCV 2021,
//! <https://arxiv.org/abs/2103.14030>.
//! Reference implementation matched: timm 1.0 `timm/models/swin_transformer.py`
//! (`PatchEmbed`, `WindowAttention`, `SwinTransformerBlock`, `PatchMerging`,
//! `SwinTransformerStage`, `SwinTransformer`, `ClassifierHead`), itself a port of
//! microsoft/Swin-Transformer. timm's current layout is followed: maps are NHWC between blocks
//! and the patch merging sits at the start of stages 1–3.
//!
//! Parameter paths are timm's `state_dict` keys, with Burn's LayerNorm names:
//!
//! | Burn path                                              | timm key / note                       |
//! |--------------------------------------------------------|---------------------------------------|
//! | `patch_embed.proj.{weight,bias}`                       | same, `[e, c, p, p]`                  |
//! | `patch_embed.norm.{gamma,beta}`                        | `patch_embed.norm.{weight,bias}`      |
//! | `layers.{i}.downsample.norm.{gamma,beta}`              | `….norm.{weight,bias}`, i ≥ 1         |
//! | `layers.{i}.downsample.reduction.weight`               | same, **transposed**, no bias         |
//! | `layers.{i}.blocks.{j}.norm{1,2}.{gamma,beta}`         | `….norm{1,2}.{weight,bias}`           |
//! | `layers.{i}.blocks.{j}.attn.relative_position_bias_table` | same, `[(2w−1)², heads]`           |
//! | `layers.{i}.blocks.{j}.attn.{qkv,proj}.{weight,bias}`  | same, weights **transposed**          |
//! | `layers.{i}.blocks.{j}.mlp.{fc1,fc2}.{weight,bias}`    | same, weights **transposed**          |
//! | `norm.{gamma,beta}`                                    | `norm.{weight,bias}`                  |
//! | `head.fc.{weight,bias}`                                | same, weight **transposed**           |
//!
//! timm's buffers `relative_position_index` and `attn_mask` are constants computed from the
//! sizes (see [`window`]), held by the modules but not visited as parameters.
//!
//! The model is built for one image size (timm's `strict_img_size=True`): a stage whose
//! resolution is no larger than the window shrinks the window to the resolution and does not
//! shift (timm's rule), so small images (32 px, 56 px) work with window 7. Maps that are not a
//! multiple of the window are zero-padded before attention, odd maps before patch merging.
//!
//! Dropout and stochastic depth are active on autodiff backends and off on inference backends
//! (`model.valid()`), as Burn's `Dropout` decides. Per-block gradient checkpointing can wrap
//! [`SwinBlock::forward`]; [`SwinStage::merge`] runs the patch merging between them.

mod attention;
mod block;
mod config;
mod drop_path;
pub mod import;
mod init;
mod model;
mod patch_embed;
mod patch_merging;
mod stage;
pub mod window;

pub use attention::WindowAttention;
pub use block::{Mlp, SwinBlock};
pub use config::{BlockGeometry, SwinConfig, SwinConfigError};
pub use drop_path::drop_path;
pub use import::{SwinImportError, load_timm_swin, load_timm_swin_backbone};
pub use init::INIT_STD;
pub use model::{ClassifierHead, SwinTransformer};
pub use patch_embed::PatchEmbed;
pub use patch_merging::PatchMerging;
pub use stage::SwinStage;
pub use window::{
    SHIFTED_WINDOW_MASK, cyclic_shift, relative_position_index, shifted_window_mask,
    window_partition, window_reverse,
};
