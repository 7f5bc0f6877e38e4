//! BERTs (Hugging Face's) classifying text: configuration from the recipe, construction, and
//! the forward passes with checkpointed or probed encoder layers.

use super::super::auto_checkpoint::BlockProbe;
use super::super::batch::TextInputBatch;
use super::super::bert_init::{PretrainedSummary, bert_config, init_bert};
use super::super::classify::{BlockFilter, Classify, ClassifyCheckpointed, bytes_of};
use super::ModelFamily;
use crate::recipe::Recipe;
use anyhow::Result;
use burn::tensor::backend::Backend;
use burn::tensor::{Int, Tensor};
use burnacc_checkpoint::{CheckpointBackend, CheckpointTape};
use burnacc_datasets::text::TextBatch;
use burnacc_models::bert::BertConfig;
use burnacc_models::{BertForSequenceClassification, BertInput};

/// bert-base, bert-large, minilm-l6.
pub struct BertFamily;

/// A BERT classifier's configuration: the encoder's and the number of labels.
pub struct BertClassifierConfig {
    /// The encoder.
    pub bert: BertConfig,
    /// Labels of the classification head.
    pub classes: usize,
}

impl<B: CheckpointBackend> ModelFamily<B> for BertFamily {
    type Host = TextBatch;
    type Net = BertForSequenceClassification<B>;
    type Config = BertClassifierConfig;

    fn config(recipe: &Recipe, classes: usize, _channels: usize) -> Result<BertClassifierConfig> {
        Ok(BertClassifierConfig {
            bert: bert_config(recipe),
            classes,
        })
    }

    fn build(config: &BertClassifierConfig, device: &B::Device) -> Self::Net {
        BertForSequenceClassification::new(&config.bert, config.classes, device)
    }

    fn init(
        config: &BertClassifierConfig,
        recipe: &Recipe,
        seed: u64,
        device: &B::Device,
    ) -> Result<(Self::Net, Option<PretrainedSummary>)> {
        init_bert::<B>(recipe, config.classes, seed, device)
    }

    fn reference_config(config: &BertClassifierConfig) -> String {
        config.bert.reference_config(config.classes)
    }
}

impl<B: Backend> Classify<B, TextBatch> for BertForSequenceClassification<B> {
    fn classify(&self, batch: TextInputBatch<B>) -> (Tensor<B, 2>, Tensor<B, 1, Int>) {
        (self.forward(&batch.input), batch.labels)
    }
}

impl<B: CheckpointBackend> ClassifyCheckpointed<B, TextBatch> for BertForSequenceClassification<B> {
    /// Checkpointed encoder layers (dropout masks are replayed on recompute by the step's
    /// tape).
    fn classify_checkpointed(
        &self,
        batch: TextInputBatch<B>,
        tape: &mut CheckpointTape<B>,
        checkpoint: BlockFilter,
    ) -> (Tensor<B, 2>, Tensor<B, 1, Int>) {
        (
            bert_forward_selected(self, &batch.input, tape, checkpoint),
            batch.labels,
        )
    }

    fn classify_probed(
        &self,
        batch: TextInputBatch<B>,
        probe: &mut dyn BlockProbe,
    ) -> Tensor<B, 2> {
        bert_forward_probed(self, &batch.input, probe)
    }
}

/// BERT's forward pass with every encoder layer checkpointed on `tape`.
///
/// input: `[rows, seq]` → logits `[samples, classes]`.
pub fn bert_forward_checkpointed<B: CheckpointBackend>(
    model: &BertForSequenceClassification<B>,
    input: &BertInput<B>,
    tape: &mut CheckpointTape<B>,
) -> Tensor<B, 2> {
    bert_forward_selected(model, input, tape, &|_| true)
}

/// BERT's forward pass with the encoder layers `checkpoint` selects checkpointed on `tape`.
pub fn bert_forward_selected<B: CheckpointBackend>(
    model: &BertForSequenceClassification<B>,
    input: &BertInput<B>,
    tape: &mut CheckpointTape<B>,
    checkpoint: BlockFilter,
) -> Tensor<B, 2> {
    let mut x = model.bert.embed(input);
    for (i, layer) in model.bert.encoder.layer.iter().enumerate() {
        let bias = input.attention_bias.clone();
        x = if checkpoint(i) {
            tape.checkpoint(layer, x, move |layer, x| layer.forward(x, bias.clone()))
        } else {
            tape.unchecked(layer, x, |layer, x| layer.forward(x, bias))
        };
    }
    model.head(x, input)
}

/// BERT's forward pass with `probe` around each encoder layer: the logits.
pub fn bert_forward_probed<B: Backend>(
    model: &BertForSequenceClassification<B>,
    input: &BertInput<B>,
    probe: &mut dyn BlockProbe,
) -> Tensor<B, 2> {
    let mut x = model.bert.embed(input);
    for layer in &model.bert.encoder.layer {
        probe.before_block(bytes_of(&x));
        x = layer.forward(x, input.attention_bias.clone());
        probe.after_block();
    }
    model.head(x, input)
}
