//! Loading Hugging Face BERT weights (`model.safetensors`, or `pytorch_model.bin` through
//! [`crate::checkpoint_file`]) into [`BertModel`] and [`BertForSequenceClassification`]
//! through burn-store.
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

use super::config::{BertConfig, HiddenAct};
use super::model::{BertForSequenceClassification, BertModel};
use crate::checkpoint_file::{LoadFailure, LoadOptions, apply_checkpoint};
use crate::pytorch_export::ReferenceExport;
use burn::tensor::backend::Backend;
use burn_store::ModuleSnapshot;
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
    let mut remaps = vec![prefix_remap];
    remaps.extend(COMMON_REMAPS);
    let options = LoadOptions {
        remaps: &remaps,
        predicate: None,
    };
    let result = apply_checkpoint(module, path, &options).map_err(|failure| match failure {
        LoadFailure::Read(reason) => BertImportError::Read {
            path: path.to_owned(),
            reason,
        },
        LoadFailure::Mismatch(errors) => BertImportError::Mismatch {
            path: path.to_owned(),
            errors,
        },
    })?;
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

/// Burn path → Hugging Face key, after burn-store's adapter named γ/β `weight`/`bias`.
const HF_NAMES: [(&str, &str); 2] = [
    (r"\.layer_norm\.", ".LayerNorm."),
    (r"\.self_attn\.", ".self."),
];

/// transformers' `BertForSequenceClassification` keys (`bert.…`, `classifier.…`).
impl<B: Backend> ReferenceExport for BertForSequenceClassification<B> {
    const LIBRARY: &'static str = "transformers";
    const RENAMES: &'static [(&'static str, &'static str)] = &HF_NAMES;
}

/// transformers' `BertModel` keys (no prefix).
impl<B: Backend> ReferenceExport for BertModel<B> {
    const LIBRARY: &'static str = "transformers";
    const RENAMES: &'static [(&'static str, &'static str)] = &HF_NAMES;
}

impl BertConfig {
    /// The keyword arguments of transformers' `BertConfig` for a classifier of `num_labels`
    /// labels (JSON), as `scripts/check_export.py` builds `BertForSequenceClassification`.
    pub fn reference_config(&self, num_labels: usize) -> String {
        let hidden_act = match self.hidden_act {
            HiddenAct::Gelu => "gelu",
            HiddenAct::GeluTanh => "gelu_pytorch_tanh",
            HiddenAct::QuickGelu => "quick_gelu",
        };
        serde_json::json!({
            "vocab_size": self.vocab_size,
            "hidden_size": self.hidden_size,
            "num_hidden_layers": self.num_hidden_layers,
            "num_attention_heads": self.num_attention_heads,
            "intermediate_size": self.intermediate_size,
            "hidden_act": hidden_act,
            "hidden_dropout_prob": self.hidden_dropout_prob,
            "attention_probs_dropout_prob": self.attention_probs_dropout_prob,
            "max_position_embeddings": self.max_position_embeddings,
            "type_vocab_size": self.type_vocab_size,
            "layer_norm_eps": self.layer_norm_eps,
            "num_labels": num_labels,
        })
        .to_string()
    }
}
