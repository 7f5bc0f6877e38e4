//! Hugging Face's BERT initialisation as Burn initializers.

use super::config::BertConfig;
use burn::module::{Initializer, Param};
use burn::nn::{Linear, LinearConfig};
use burn::tensor::Tensor;
use burn::tensor::backend::Backend;

/// normal(0, `initializer_range`), Hugging Face's `_init_weights` for weights and embeddings.
pub fn normal(c: &BertConfig) -> Initializer {
    Initializer::Normal {
        mean: 0.0,
        std: c.initializer_range,
    }
}

/// A `[d_input → d_output]` linear layer initialised as Hugging Face does: weight
/// normal(0, `initializer_range`), bias zero (Burn would draw the bias from the weight's
/// initializer).
pub fn linear<B: Backend>(
    c: &BertConfig,
    d_input: usize,
    d_output: usize,
    device: &B::Device,
) -> Linear<B> {
    let mut layer = LinearConfig::new(d_input, d_output)
        .with_initializer(normal(c))
        .init(device);
    layer.bias = Some(Param::from_tensor(Tensor::zeros([d_output], device)));
    layer
}
