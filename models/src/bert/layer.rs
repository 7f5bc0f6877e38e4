//! [`BertLayer`]: attention followed by the feed-forward block, as Hugging Face's `BertLayer`.

use super::attention::BertAttention;
use super::config::{BertConfig, HiddenAct};
use super::init::linear;
use burn::module::Module;
use burn::nn::{Dropout, DropoutConfig, LayerNorm, LayerNormConfig, Linear};
use burn::tensor::Tensor;
use burn::tensor::activation::{gelu, gelu_approximate, sigmoid};
use burn::tensor::backend::Backend;

/// `act(x)`, elementwise, any shape.
pub fn hidden_activation<B: Backend, const D: usize>(
    act: HiddenAct,
    x: Tensor<B, D>,
) -> Tensor<B, D> {
    match act {
        HiddenAct::Gelu => gelu(x),
        HiddenAct::GeluTanh => gelu_approximate(x),
        // CLIP's x·σ(1.702·x).
        HiddenAct::QuickGelu => x.clone() * sigmoid(x.mul_scalar(1.702)),
    }
}

/// Hugging Face `BertIntermediate`: the feed-forward expansion and its activation.
#[derive(Module, Debug)]
pub struct BertIntermediate<B: Backend> {
    /// `[hidden → intermediate]`.
    pub dense: Linear<B>,
    act: HiddenAct,
}

/// Hugging Face `BertOutput`: the feed-forward contraction, dropout, residual, LayerNorm.
#[derive(Module, Debug)]
pub struct BertOutput<B: Backend> {
    /// `[intermediate → hidden]`.
    pub dense: Linear<B>,
    /// Post-residual normalisation (Hugging Face `LayerNorm`).
    pub layer_norm: LayerNorm<B>,
    dropout: Dropout,
}

/// One encoder layer.
#[derive(Module, Debug)]
pub struct BertLayer<B: Backend> {
    /// Self-attention, residual, LayerNorm.
    pub attention: BertAttention<B>,
    /// Feed-forward expansion.
    pub intermediate: BertIntermediate<B>,
    /// Feed-forward contraction, residual, LayerNorm.
    pub output: BertOutput<B>,
}

impl<B: Backend> BertLayer<B> {
    /// Random initialisation.
    pub fn new(c: &BertConfig, device: &B::Device) -> Self {
        Self {
            attention: BertAttention::new(c, device),
            intermediate: BertIntermediate {
                dense: linear(c, c.hidden_size, c.intermediate_size, device),
                act: c.hidden_act,
            },
            output: BertOutput {
                dense: linear(c, c.intermediate_size, c.hidden_size, device),
                layer_norm: LayerNormConfig::new(c.hidden_size)
                    .with_epsilon(c.layer_norm_eps)
                    .init(device),
                dropout: DropoutConfig::new(c.hidden_dropout_prob).init(),
            },
        }
    }

    /// x `[rows, seq, hidden]`, bias `[rows, 1, seq, seq]` → `[rows, seq, hidden]`.
    pub fn forward(&self, x: Tensor<B, 3>, bias: Tensor<B, 4>) -> Tensor<B, 3> {
        let x = self.attention.forward(x, bias);
        let expanded = hidden_activation(
            self.intermediate.act,
            self.intermediate.dense.forward(x.clone()),
        );
        let y = self
            .output
            .dropout
            .forward(self.output.dense.forward(expanded));
        self.output.layer_norm.forward(y + x)
    }
}
