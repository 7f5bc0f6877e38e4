//! [`BertEmbeddings`]: word + position + token-type embeddings, LayerNorm, dropout.

use super::config::BertConfig;
use super::init::normal;
use burn::module::Module;
use burn::nn::{Dropout, DropoutConfig, Embedding, EmbeddingConfig, LayerNorm, LayerNormConfig};
use burn::tensor::backend::Backend;
use burn::tensor::{Int, Tensor};

/// Hugging Face `BertEmbeddings` (its `LayerNorm` is `layer_norm` here).
#[derive(Module, Debug)]
pub struct BertEmbeddings<B: Backend> {
    /// `[vocab_size, hidden]`.
    pub word_embeddings: Embedding<B>,
    /// `[max_position_embeddings, hidden]`.
    pub position_embeddings: Embedding<B>,
    /// `[type_vocab_size, hidden]`.
    pub token_type_embeddings: Embedding<B>,
    /// Normalises the sum.
    pub layer_norm: LayerNorm<B>,
    dropout: Dropout,
}

impl<B: Backend> BertEmbeddings<B> {
    /// Random initialisation as Hugging Face (normal(0, initializer_range)).
    pub fn new(c: &BertConfig, device: &B::Device) -> Self {
        let table = |rows: usize| {
            EmbeddingConfig::new(rows, c.hidden_size)
                .with_initializer(normal(c))
                .init(device)
        };
        Self {
            word_embeddings: table(c.vocab_size),
            position_embeddings: table(c.max_position_embeddings),
            token_type_embeddings: table(c.type_vocab_size),
            layer_norm: LayerNormConfig::new(c.hidden_size)
                .with_epsilon(c.layer_norm_eps)
                .init(device),
            dropout: DropoutConfig::new(c.hidden_dropout_prob).init(),
        }
    }

    /// ids `[rows, seq]` each → `[rows, seq, hidden]`.
    pub fn forward(
        &self,
        input_ids: Tensor<B, 2, Int>,
        token_type_ids: Tensor<B, 2, Int>,
        position_ids: Tensor<B, 2, Int>,
    ) -> Tensor<B, 3> {
        let x = self.word_embeddings.forward(input_ids)
            + self.token_type_embeddings.forward(token_type_ids)
            + self.position_embeddings.forward(position_ids);
        self.dropout.forward(self.layer_norm.forward(x))
    }
}
