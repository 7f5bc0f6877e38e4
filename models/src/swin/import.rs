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

use std::path::{Path, PathBuf};

use burn::tensor::backend::Backend;
use burn_store::{ModuleSnapshot, PyTorchToBurnAdapter, SafetensorsStore, SafetensorsStoreError};

use super::model::SwinTransformer;
use crate::bert::ImportReport;

/// Errors of [`load_timm_swin`] and [`load_timm_swin_backbone`]; each names the file.
#[derive(Debug, thiserror::Error)]
pub enum SwinImportError {
    /// The file is missing, unreadable or not safetensors.
    #[error("cannot load Swin weights from {}: {reason}", .path.display())]
    Read {
        /// The weights file.
        path: PathBuf,
        /// The store's error.
        reason: String,
    },
    /// Tensors had the wrong shape or dtype for this configuration.
    #[error("Swin weights {} do not fit the model (wrong config, image or window size?): {errors}", .path.display())]
    Mismatch {
        /// The weights file.
        path: PathBuf,
        /// The store's errors, one per line.
        errors: String,
    },
    /// Parameters the file does not provide.
    #[error("Swin weights {} lack {} tensor(s) of the model, e.g. {}", .path.display(), .missing.len(), .missing.first().map(String::as_str).unwrap_or(""))]
    Missing {
        /// The weights file.
        path: PathBuf,
        /// Burn paths not found.
        missing: Vec<String>,
    },
}

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

fn load<B: Backend>(
    model: &mut SwinTransformer<B>,
    path: &Path,
    skip_head: bool,
) -> Result<ImportReport, SwinImportError> {
    let read_error = |reason: String| SwinImportError::Read {
        path: path.to_owned(),
        reason,
    };
    if !path.is_file() {
        return Err(read_error("no such file".into()));
    }
    let mut store = SafetensorsStore::from_file(path)
        .with_from_adapter(PyTorchToBurnAdapter)
        .allow_partial(true);
    for (from, to) in NORM_REMAPS {
        store = store.with_key_remapping(from, to);
    }
    if skip_head {
        store = store.with_predicate(not_head);
    }
    // Shape mismatches surface as a validation failure of the whole load.
    let result = model.load_from(&mut store).map_err(|e| match e {
        SafetensorsStoreError::ValidationFailed(errors) => SwinImportError::Mismatch {
            path: path.to_owned(),
            errors,
        },
        other => read_error(other.to_string()),
    })?;
    if !result.errors.is_empty() {
        let errors: Vec<String> = result.errors.iter().map(|e| e.to_string()).collect();
        return Err(SwinImportError::Mismatch {
            path: path.to_owned(),
            errors: errors.join("\n"),
        });
    }
    let (mut head, missing): (Vec<String>, Vec<String>) = result
        .missing
        .into_iter()
        .map(|(p, _)| p)
        .chain(result.skipped)
        .partition(|p| skip_head && p.starts_with("head."));
    if !missing.is_empty() {
        return Err(SwinImportError::Missing {
            path: path.to_owned(),
            missing,
        });
    }
    head.sort();
    Ok(ImportReport {
        applied: result.applied.len(),
        missing: head,
        unused: result.unused,
    })
}
