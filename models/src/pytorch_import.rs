//! Loading PyTorch checkpoints (safetensors or `torch.save` pickles with a reference
//! implementation's `state_dict` keys, [`crate::checkpoint_file`]) into a model whose fields
//! mirror it, through burn-store: what the timm Swin and torchvision ResNet imports share.
//!
//! Keys map one to one onto Burn paths, except for the family's renames (`remaps`: regexes
//! over the file's keys, e.g. norm `weight`/`bias` → Burn's `gamma`/`beta`) and `Linear`
//! weights, transposed from PyTorch's `[out, in]` to Burn's `[in, out]` by burn-store's
//! `PyTorchToBurnAdapter`. Tensors are read as stored (f32 for these checkpoints).

use crate::bert::ImportReport;
use crate::checkpoint_file::{LoadFailure, LoadOptions, apply_checkpoint};
use burn::module::Module;
use burn::tensor::backend::Backend;
use std::path::{Path, PathBuf};

/// Errors of a PyTorch import; each names the family and the file.
#[derive(Debug, thiserror::Error)]
pub enum PytorchImportError {
    /// The file is missing, unreadable or not safetensors.
    #[error("cannot load {family} weights from {}: {reason}", .path.display())]
    Read {
        /// `Swin`, `ResNet`.
        family: &'static str,
        /// The weights file.
        path: PathBuf,
        /// The store's error.
        reason: String,
    },
    /// Tensors had the wrong shape or dtype for this configuration.
    #[error("{family} weights {} do not fit the model ({hint}): {errors}", .path.display())]
    Mismatch {
        /// `Swin`, `ResNet`.
        family: &'static str,
        /// The weights file.
        path: PathBuf,
        /// What usually differs.
        hint: &'static str,
        /// The store's errors, one per line.
        errors: String,
    },
    /// Parameters the file does not provide.
    #[error("{family} weights {} lack {} tensor(s) of the model, e.g. {}", .path.display(), .missing.len(), .missing.first().map(String::as_str).unwrap_or(""))]
    Missing {
        /// `Swin`, `ResNet`.
        family: &'static str,
        /// The weights file.
        path: PathBuf,
        /// Burn paths not found.
        missing: Vec<String>,
    },
}

/// How a family's checkpoints map onto its Burn model.
pub(crate) struct Family {
    /// `Swin`, `ResNet`: named in errors.
    pub name: &'static str,
    /// What usually differs when shapes do not fit.
    pub hint: &'static str,
    /// `(regex over the file's keys, replacement)`, applied in order.
    pub remaps: &'static [(&'static str, &'static str)],
    /// Burn path prefix of the classifier (`head.`, `fc.`).
    pub head: &'static str,
    /// The classifier's predicate for burn-store: everything but [`Family::head`].
    pub not_head: fn(&str, &str) -> bool,
}

/// Loads `path` into `model`: every parameter, or all but the classifier (`skip_head`), which
/// then keeps its initial values and is reported in [`ImportReport::missing`].
pub(crate) fn load<B: Backend, M: Module<B>>(
    model: &mut M,
    path: &Path,
    family: &Family,
    skip_head: bool,
) -> Result<ImportReport, PytorchImportError> {
    let options = LoadOptions {
        remaps: family.remaps,
        predicate: skip_head.then_some(family.not_head),
    };
    let result = apply_checkpoint(model, path, &options).map_err(|failure| match failure {
        LoadFailure::Read(reason) => PytorchImportError::Read {
            family: family.name,
            path: path.to_owned(),
            reason,
        },
        LoadFailure::Mismatch(errors) => PytorchImportError::Mismatch {
            family: family.name,
            path: path.to_owned(),
            hint: family.hint,
            errors,
        },
    })?;
    let (mut head, missing): (Vec<String>, Vec<String>) = result
        .missing
        .into_iter()
        .map(|(p, _)| p)
        .chain(result.skipped)
        .partition(|p| skip_head && p.starts_with(family.head));
    if !missing.is_empty() {
        return Err(PytorchImportError::Missing {
            family: family.name,
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
