//! BERT for sequence classification, structured and named as Hugging Face `transformers`.
//!
//! Paper: J. Devlin, M.-W. Chang, K. Lee, K. Toutanova, "BERT: Pre-training of Deep
//! Bidirectional Transformers for Language Understanding", NAACL 2019,
//! <https://arxiv.org/abs/1810.04805>.
//! Reference implementation matched: `transformers/models/bert/modeling_bert.py`
//! (`BertEmbeddings`, `BertSelfAttention` with eager attention, `BertSelfOutput`,
//! `BertIntermediate`, `BertOutput`, `BertLayer`, `BertPooler`, `BertModel`,
//! `BertForSequenceClassification`), post-LayerNorm, exact-erf GELU by default.
//!
//! Field names follow Hugging Face's module tree so that [`import`] maps a `model.safetensors`
//! one to one (see its table for the three renames). Presets: [`BertConfig::base`],
//! [`BertConfig::large`], [`BertConfig::minilm_l6`]; [`BertConfig::from_hf_json`] reads a
//! `config.json`.
//!
//! Batches are [`BertInput`]s: padded (one sample per row) or packed (several samples per row,
//! each attending only to itself through a block-diagonal mask built from segment ids, with
//! positions restarting at each sample). Dropout is active on autodiff backends and off on
//! inference backends (`model.valid()`), as Burn's `Dropout` decides.

mod attention;
mod config;
mod embeddings;
pub mod import;
mod init;
mod input;
mod layer;
mod model;

pub use attention::{BertAttention, BertSelfAttention, BertSelfOutput};
pub use config::{BertConfig, BertConfigError, HiddenAct};
pub use embeddings::BertEmbeddings;
pub use import::{BertImportError, ImportReport, load_bert_classifier, load_bert_model};
pub use input::{BertInput, MASKED_SCORE, attention_bias};
pub use layer::{BertIntermediate, BertLayer, BertOutput, hidden_activation};
pub use model::{BertEncoder, BertForSequenceClassification, BertModel, BertPooler};
