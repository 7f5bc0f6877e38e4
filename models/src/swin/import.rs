//! Loading timm Swin weights (safetensors with timm's current `state_dict` keys) into
//! [`SwinTransformer`] through burn-store.
//!
//! Keys map one to one onto Burn paths (the model mirrors timm field for field), with two
//! changes: LayerNorm's `weight`/`bias` are Burn's `gamma`/`beta`, and `Linear` weights are
//! transposed from PyTorch's `[out, in]` to Burn's `[in, out]` (burn-store's
//! `PyTorchToBurnAdapter`). Non-persistent buffers (`relative_position_index`, `attn_mask`),
//! when a file has them, are reported as unused: the model computes them.
//!
//! Checkpoints of the original implementation (patch merging at the end of stages 0–2,
//! `layers.{i}.downsample` and `head.weight`) must first be converted with timm's
//! `checkpoint_filter_fn` (which renames them to `layers.{i+1}.downsample` and `head.fc.weight`).

use std::path::Path;

use burn::tensor::backend::Backend;

use super::config::SwinConfig;
use super::model::SwinTransformer;
use crate::bert::ImportReport;
use crate::pytorch_export::ReferenceExport;
use crate::pytorch_import::{self, Family, PytorchImportError};

/// Errors of [`load_timm_swin`] and [`load_timm_swin_backbone`]; each names the file.
pub type SwinImportError = PytorchImportError;

/// LayerNorms of the model are fields named `norm`, `norm1` or `norm2`; their PyTorch names are
/// mapped here rather than by the adapter, whose alternative-name lookup loads them but still
/// reports the file's keys as unused.
const NORM_REMAPS: [(&str, &str); 2] = [
    (r"^(.*\bnorm[12]?)\.weight$", "$1.gamma"),
    (r"^(.*\bnorm[12]?)\.bias$", "$1.beta"),
];

/// Loads every parameter of `model`, classifier included, from a timm checkpoint.
pub fn load_timm_swin<B: Backend>(
    model: &mut SwinTransformer<B>,
    path: &Path,
) -> Result<ImportReport, SwinImportError> {
    load(model, path, false)
}

/// Loads every parameter but the classifier (`head.fc`), which keeps its initial values: for
/// fine-tuning on a different number of classes. The file's `head.*` keys are reported unused.
pub fn load_timm_swin_backbone<B: Backend>(
    model: &mut SwinTransformer<B>,
    path: &Path,
) -> Result<ImportReport, SwinImportError> {
    load(model, path, true)
}

fn not_head(path: &str, _container: &str) -> bool {
    !path.starts_with("head.")
}

/// timm's Swin checkpoints.
const SWIN: Family = Family {
    name: "Swin",
    hint: "wrong config, image or window size?",
    remaps: &NORM_REMAPS,
    head: "head.",
    not_head,
};

fn load<B: Backend>(
    model: &mut SwinTransformer<B>,
    path: &Path,
    skip_head: bool,
) -> Result<ImportReport, SwinImportError> {
    pytorch_import::load(model, path, &SWIN, skip_head)
}

/// timm's `state_dict` without its non-persistent buffers; no renames beyond the adapter's.
impl<B: Backend> ReferenceExport for SwinTransformer<B> {
    const LIBRARY: &'static str = "timm";
}

impl SwinConfig {
    /// The keyword arguments of timm's `SwinTransformer` for this configuration (JSON).
    pub fn reference_config(&self) -> String {
        serde_json::json!({
            "img_size": self.img_size,
            "patch_size": self.patch_size,
            "in_chans": self.in_chans,
            "num_classes": self.num_classes,
            "embed_dim": self.embed_dim,
            "depths": self.depths,
            "num_heads": self.num_heads,
            "window_size": self.window_size,
            "mlp_ratio": self.mlp_ratio,
            "qkv_bias": self.qkv_bias,
            "drop_rate": self.drop_rate,
            "proj_drop_rate": self.proj_drop_rate,
            "attn_drop_rate": self.attn_drop_rate,
            "drop_path_rate": self.drop_path_rate,
        })
        .to_string()
    }
}
