//! Loading torchvision ResNet weights (safetensors with torchvision's `state_dict` keys, e.g.
//! `resnet50.safetensors` converted from `ResNet50_Weights.IMAGENET1K_V2`) into [`ResNet`]
//! through burn-store.
//!
//! [`ResNet`] mirrors torchvision's fields (`conv1`, `bn1`, `layer1.0.conv1`, …,
//! `downsample.0`/`.1`, `fc`), so keys map one to one, with two changes: batch norm's
//! `weight`/`bias` are Burn's `gamma`/`beta`, and `fc.weight` is transposed to Burn's
//! `[in, out]`. `num_batches_tracked` has no counterpart (Burn's batch norm uses a fixed
//! momentum, as torchvision's) and is reported unused.

use std::path::Path;

use burn::tensor::backend::Backend;

use crate::bert::ImportReport;
use crate::pytorch_export::ReferenceExport;
use crate::pytorch_import::{self, Family, PytorchImportError};
use crate::resnet::{BlockKind, ResNet, ResNetConfig};

/// Errors of [`load_torchvision_resnet`] and [`load_torchvision_resnet_backbone`]; each names
/// the file.
pub type ResNetImportError = PytorchImportError;

/// Batch norms are the fields `bn1`..`bn3` and `downsample.1`; their PyTorch names are mapped
/// here rather than by the adapter, whose alternative-name lookup loads them but still reports
/// the file's keys as unused.
const BATCH_NORM_REMAPS: [(&str, &str); 2] = [
    (r"^(.*\b(?:bn[123]|downsample\.1))\.weight$", "$1.gamma"),
    (r"^(.*\b(?:bn[123]|downsample\.1))\.bias$", "$1.beta"),
];

fn not_head(path: &str, _container: &str) -> bool {
    !path.starts_with("fc.")
}

/// torchvision's ResNet checkpoints.
const RESNET: Family = Family {
    name: "ResNet",
    hint: "another depth, block or width?",
    remaps: &BATCH_NORM_REMAPS,
    head: "fc.",
    not_head,
};

/// Loads every parameter and running statistic of `model`, classifier included, from a
/// torchvision checkpoint.
pub fn load_torchvision_resnet<B: Backend>(
    model: &mut ResNet<B>,
    path: &Path,
) -> Result<ImportReport, ResNetImportError> {
    pytorch_import::load(model, path, &RESNET, false)
}

/// Loads everything but the classifier (`fc`), which keeps its initial values: for
/// fine-tuning on another number of classes. The file's `fc.*` keys are reported unused.
pub fn load_torchvision_resnet_backbone<B: Backend>(
    model: &mut ResNet<B>,
    path: &Path,
) -> Result<ImportReport, ResNetImportError> {
    pytorch_import::load(model, path, &RESNET, true)
}

/// torchvision's `state_dict`: batch norms with `num_batches_tracked`, no other renames.
impl<B: Backend> ReferenceExport for ResNet<B> {
    const LIBRARY: &'static str = "torchvision";
    const COUNTS_BATCHES: bool = true;
}

impl ResNetConfig {
    /// The arguments of the torchvision-structured ResNet `scripts/check_export.py` builds
    /// (JSON): `block` (`basic`/`bottleneck`), `layers`, `width`, `num_classes`, `in_channels`,
    /// `small_input_stem`.
    pub fn reference_config(&self) -> String {
        let block = match self.block {
            BlockKind::Basic => "basic",
            BlockKind::Bottleneck => "bottleneck",
        };
        serde_json::json!({
            "block": block,
            "layers": self.layers,
            "width": self.base_width,
            "num_classes": self.num_classes,
            "in_channels": self.in_channels,
            "small_input_stem": self.small_input_stem,
        })
        .to_string()
    }
}
