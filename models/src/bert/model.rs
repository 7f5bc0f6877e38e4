//! [`BertModel`] (embeddings, encoder, pooler) and [`BertForSequenceClassification`].

use super::config::BertConfig;
use super::embeddings::BertEmbeddings;
use super::init::linear;
use super::input::BertInput;
use super::layer::BertLayer;
use burn::module::Module;
use burn::nn::{Dropout, DropoutConfig, Linear};
use burn::tensor::Tensor;
use burn::tensor::activation::tanh;
use burn::tensor::backend::Backend;

/// Hugging Face `BertEncoder`: the stack of layers (`layer.0` … `layer.{n-1}`).
#[derive(Module, Debug)]
pub struct BertEncoder<B: Backend> {
    /// The layers, in order.
    pub layer: Vec<BertLayer<B>>,
}

/// Hugging Face `BertPooler`: `tanh(dense(h_[CLS]))`.
#[derive(Module, Debug)]
pub struct BertPooler<B: Backend> {
    /// `[hidden → hidden]`.
    pub dense: Linear<B>,
}

/// Hugging Face `BertModel`: embeddings, encoder and pooler.
#[derive(Module, Debug)]
pub struct BertModel<B: Backend> {
    /// Token, position and token-type embeddings.
    pub embeddings: BertEmbeddings<B>,
    /// The layers.
    pub encoder: BertEncoder<B>,
    /// `[CLS]` pooling for classification.
    pub pooler: BertPooler<B>,
}

impl<B: Backend> BertModel<B> {
    /// Random initialisation as Hugging Face.
    pub fn new(c: &BertConfig, device: &B::Device) -> Self {
        Self {
            embeddings: BertEmbeddings::new(c, device),
            encoder: BertEncoder {
                layer: (0..c.num_hidden_layers)
                    .map(|_| BertLayer::new(c, device))
                    .collect(),
            },
            pooler: BertPooler {
                dense: linear(c, c.hidden_size, c.hidden_size, device),
            },
        }
    }

    /// The embeddings of `input`, `[rows, seq, hidden]` (what the first layer reads).
    pub fn embed(&self, input: &BertInput<B>) -> Tensor<B, 3> {
        self.embeddings.forward(
            input.input_ids.clone(),
            input.token_type_ids.clone(),
            input.position_ids.clone(),
        )
    }

    /// Hugging Face's `last_hidden_state`, `[rows, seq, hidden]`.
    pub fn last_hidden_state(&self, input: &BertInput<B>) -> Tensor<B, 3> {
        let mut x = self.embed(input);
        for layer in &self.encoder.layer {
            x = layer.forward(x, input.attention_bias.clone());
        }
        x
    }

    /// The pooled `[CLS]` representation of every sample, `[samples, hidden]` in
    /// `input.cls_index` order. hidden: `[rows, seq, hidden]`.
    pub fn pool(&self, hidden: Tensor<B, 3>, input: &BertInput<B>) -> Tensor<B, 2> {
        let [rows, seq, width] = hidden.dims();
        let cls = hidden
            .reshape([rows * seq, width])
            .select(0, input.cls_index.clone());
        tanh(self.pooler.dense.forward(cls))
    }
}

/// Hugging Face `BertForSequenceClassification`: BERT, dropout on the pooled `[CLS]`, and a
/// linear classifier.
#[derive(Module, Debug)]
pub struct BertForSequenceClassification<B: Backend> {
    /// The encoder (Hugging Face `bert`).
    pub bert: BertModel<B>,
    dropout: Dropout,
    /// `[hidden → num_labels]`.
    pub classifier: Linear<B>,
}

impl<B: Backend> BertForSequenceClassification<B> {
    /// Random initialisation as Hugging Face, `num_labels` outputs.
    pub fn new(c: &BertConfig, num_labels: usize, device: &B::Device) -> Self {
        Self {
            bert: BertModel::new(c, device),
            dropout: DropoutConfig::new(c.hidden_dropout_prob).init(),
            classifier: linear(c, c.hidden_size, num_labels, device),
        }
    }

    /// Logits `[samples, num_labels]`, one row per `[CLS]` of `input`, in `cls_index` order.
    pub fn forward(&self, input: &BertInput<B>) -> Tensor<B, 2> {
        let hidden = self.bert.last_hidden_state(input);
        self.head(hidden, input)
    }

    /// Pooler, dropout and classifier on the encoder's output `[rows, seq, hidden]`.
    pub fn head(&self, hidden: Tensor<B, 3>, input: &BertInput<B>) -> Tensor<B, 2> {
        let pooled = self.bert.pool(hidden, input);
        self.classifier.forward(self.dropout.forward(pooled))
    }

    /// Number of output classes.
    pub fn num_labels(&self) -> usize {
        self.classifier.weight.dims()[1]
    }
}
