//! Loading Hugging Face BERT weights (`model.safetensors`) into [`BertModel`] and
//! [`BertForSequenceClassification`] through burn-store.
//!
//! The files use `transformers`' `state_dict` keys, with or without the `bert.` prefix
//! (`BertModel` checkpoints have none, `BertForSequenceClassification` ones do). Keys map one
//! to one onto the Burn paths of this module tree, except for three renames:
//!
//! | Hugging Face key                        | Burn path                                   |
//! |-----------------------------------------|---------------------------------------------|
//! | `….LayerNorm.weight` / `.bias`          | `….layer_norm.gamma` / `.beta`              |
//! | `encoder.layer.N.attention.self.query…` | `encoder.layer.N.attention.self_attn.query…`|
//! | `*.weight` of a `Linear`, `[out, in]`   | `*.weight`, transposed to Burn's `[in, out]`|
//!
//! (`self` is a Rust keyword; Burn calls LayerNorm's affine parameters γ and β.)
//! Tensors are read as stored (f32 for the published checkpoints).

use super::model::{BertForSequenceClassification, BertModel};
use burn::tensor::backend::Backend;
use burn_store::{ModuleSnapshot, PyTorchToBurnAdapter, SafetensorsStore};
use std::path::{Path, PathBuf};

/// What a load did.
#[derive(Clone, Debug, Default)]
pub struct ImportReport {
    /// Tensors loaded from the file.
    pub applied: usize,
    /// Burn paths left at their initial values because the file lacks them (only those the
    /// caller allows: a fresh classification head, a missing pooler).
    pub missing: Vec<String>,
    /// Keys of the file that no parameter reads (e.g. `embeddings.position_ids`, a buffer).
    pub unused: Vec<String>,
}

/// Errors of [`load_bert_model`] and [`load_bert_classifier`]; each names the file.
#[derive(Debug, thiserror::Error)]
pub enum BertImportError {
    /// The file is missing, unreadable or not safetensors.
    #[error("cannot load BERT weights from {}: {reason}", .path.display())]
    Read {
        /// The weights file.
        path: PathBuf,
        /// The store's error.
        reason: String,
    },
    /// Tensors had the wrong shape or dtype for this configuration.
    #[error("BERT weights {} do not fit the model (wrong config?): {errors}", .path.display())]
    Mismatch {
        /// The weights file.
        path: PathBuf,
        /// The store's errors, one per line.
        errors: String,
    },
    /// Parameters the file does not provide and that cannot stay at their initial values.
    #[error("BERT weights {} lack {} tensor(s) of the model, e.g. {}", .path.display(), .missing.len(), .missing.first().map(String::as_str).unwrap_or(""))]
    Missing {
        /// The weights file.
        path: PathBuf,
        /// Burn paths not found.
        missing: Vec<String>,
    },
}

/// The renames shared by both entry points (Hugging Face key → Burn path).
/// LayerNorm's names are mapped here rather than by burn-store's adapter, whose alternative-name
/// lookup loads them but still reports the file's keys as unused.
const COMMON_REMAPS: [(&str, &str); 3] = [
    (r"\.LayerNorm\.(weight|gamma)$", ".layer_norm.gamma"),
    (r"\.LayerNorm\.(bias|beta)$", ".layer_norm.beta"),
    (r"\.attention\.self\.", ".attention.self_attn."),
];

/// Loads a Hugging Face `BertModel` checkpoint into `model` (keys with or without `bert.`).
/// Every parameter except the pooler must be in the file.
pub fn load_bert_model<B: Backend>(
    model: &mut BertModel<B>,
    path: &Path,
) -> Result<ImportReport, BertImportError> {
    load(model, path, (r"^bert\.", ""), &["pooler."])
}

/// Loads a Hugging Face `BertModel` or `BertForSequenceClassification` checkpoint into `model`.
/// The classifier (and the pooler, which sentence-embedding exports drop) keep their initial
/// values when the file lacks them; every other parameter must be in the file.
pub fn load_bert_classifier<B: Backend>(
    model: &mut BertForSequenceClassification<B>,
    path: &Path,
) -> Result<ImportReport, BertImportError> {
    load(
        model,
        path,
        (r"^(?:bert\.)?(embeddings|encoder|pooler)\.", "bert.$1."),
        &["bert.pooler.", "classifier."],
    )
}

fn load<B: Backend, M: ModuleSnapshot<B>>(
    module: &mut M,
    path: &Path,
    prefix_remap: (&str, &str),
    may_be_missing: &[&str],
) -> Result<ImportReport, BertImportError> {
    let read_error = |reason: String| BertImportError::Read {
        path: path.to_owned(),
        reason,
    };
    if !path.is_file() {
        return Err(read_error("no such file".into()));
    }
    let mut store = SafetensorsStore::from_file(path)
        .with_from_adapter(PyTorchToBurnAdapter)
        .with_key_remapping(prefix_remap.0, prefix_remap.1)
        .allow_partial(true);
    for (from, to) in COMMON_REMAPS {
        store = store.with_key_remapping(from, to);
    }
    let result = module
        .load_from(&mut store)
        .map_err(|e| read_error(e.to_string()))?;
    if !result.errors.is_empty() {
        let errors: Vec<String> = result.errors.iter().map(|e| e.to_string()).collect();
        return Err(BertImportError::Mismatch {
            path: path.to_owned(),
            errors: errors.join("\n"),
        });
    }
    let missing: Vec<String> = result.missing.iter().map(|(p, _)| p.clone()).collect();
    let (allowed, forbidden): (Vec<String>, Vec<String>) = missing
        .into_iter()
        .partition(|p| may_be_missing.iter().any(|prefix| p.starts_with(prefix)));
    if !forbidden.is_empty() {
        return Err(BertImportError::Missing {
            path: path.to_owned(),
            missing: forbidden,
        });
    }
    Ok(ImportReport {
        applied: result.applied.len(),
        missing: allowed,
        unused: result.unused,
    })
}
