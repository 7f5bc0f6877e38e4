//! The recipe's BERT: configuration, initial weights (drawn or imported) and its placement.

use super::init::{init_on_host, to_device, with_host_rng};
use super::text_data::default_minilm_files;
use crate::recipe::{HiddenActName, Recipe, TextPaths};
use anyhow::{Context, Result};
use burn::tensor::backend::Backend;
use burnacc_models::BertForSequenceClassification;
use burnacc_models::bert::{BertConfig, HiddenAct, load_bert_classifier};
use std::path::PathBuf;

/// What was imported into the starting model.
#[derive(Clone, Debug, serde::Serialize)]
pub struct PretrainedSummary {
    /// The weights file.
    pub file: PathBuf,
    /// Tensors loaded from it.
    pub loaded: usize,
    /// Parameters it lacks, left at their initial values (the new classification head).
    pub fresh: Vec<String>,
    /// Keys of the file nothing reads.
    pub unused: Vec<String>,
}

/// The BERT configuration of `recipe` (`model.name`, `model.hidden_act`, `model.dropout`).
pub fn bert_config(recipe: &Recipe) -> BertConfig {
    let m = &recipe.model;
    let mut config = BertConfig::from_name(m.name.as_str())
        .expect("the recipe check only admits BERT names here");
    if let Some(act) = m.bert().and_then(|b| b.hidden_act) {
        config.hidden_act = match act {
            HiddenActName::Gelu => HiddenAct::Gelu,
            HiddenActName::GeluTanh => HiddenAct::GeluTanh,
            HiddenActName::QuickGelu => HiddenAct::QuickGelu,
        };
    }
    config.hidden_dropout_prob = m.bert_dropout();
    config.attention_probs_dropout_prob = m.bert_dropout();
    config
}

/// The recipe's BERT classifier with `num_classes` outputs on `device`: drawn on the CPU from
/// `seed`, then overwritten by the recipe's weights (`model.pretrained` / `model.weights`),
/// whose file must provide every parameter but the head.
pub fn init_bert<B: Backend>(
    recipe: &Recipe,
    num_classes: usize,
    seed: u64,
    device: &B::Device,
) -> Result<(BertForSequenceClassification<B>, Option<PretrainedSummary>)> {
    let config = bert_config(recipe);
    let weights = TextPaths::of(recipe).weights;
    if weights.is_some() && recipe.model.weights.is_none() {
        // The default file: check it is the published one before reading it.
        default_minilm_files()?;
    }
    // One critical section: the parameters the file lacks are drawn when the host model is
    // recorded, which must follow the seeding with no other draw in between.
    with_host_rng(|| {
        let mut host = init_on_host(seed, |d| {
            BertForSequenceClassification::new(&config, num_classes, d)
        });
        let summary = match weights {
            Some(file) => {
                let report = load_bert_classifier(&mut host, &file).with_context(|| {
                    format!("model.weights: cannot start from {}", file.display())
                })?;
                Some(PretrainedSummary {
                    file,
                    loaded: report.applied,
                    fresh: report.missing,
                    unused: report.unused,
                })
            }
            None => None,
        };
        let model = to_device(host, device, |d| {
            BertForSequenceClassification::new(&config, num_classes, d)
        })?;
        Ok((model, summary))
    })
}
