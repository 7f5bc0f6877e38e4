//! [`BertLayer`]: attention followed by the feed-forward block, as Hugging Face's `BertLayer`.

use super::attention::BertAttention;
use super::config::{BertConfig, HiddenAct};
use super::init::linear;
use burn::module::Module;
use burn::nn::{Dropout, DropoutConfig, LayerNorm, LayerNormConfig, Linear};
use burn::tensor::Tensor;
use burn::tensor::activation::{gelu_approximate, sigmoid};
use burn::tensor::backend::Backend;
use burn::tensor::module::linear as linear_op;
use burnacc_backend::fused;
use burnacc_backend::fused::gelu;

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
        let expanded = self.intermediate.forward(x.clone());
        self.output.forward(expanded, x)
    }
}

impl<B: Backend> BertIntermediate<B> {
    /// `act(x·W + b)`: `[rows, seq, hidden]` → `[rows, seq, intermediate]`. Where the trainer
    /// routes fused kernels, the bias and exact GELU run as one fused op after the matmul,
    /// and QuickGELU as one op.
    pub fn forward(&self, x: Tensor<B, 3>) -> Tensor<B, 3> {
        match (self.act, &self.dense.bias) {
            (HiddenAct::Gelu, Some(b)) if fused::bias_gelu_routed::<B>() => {
                fused::bias_gelu(linear_op(x, self.dense.weight.val(), None), b.val())
            }
            (HiddenAct::QuickGelu, _) => fused::quick_gelu(self.dense.forward(x)),
            (act, _) => hidden_activation(act, self.dense.forward(x)),
        }
    }
}

impl<B: Backend> BertOutput<B> {
    /// `LayerNorm(dropout(h·W + b) + residual)`: `h [rows, seq, intermediate]`, `residual
    /// [rows, seq, hidden]` → `[rows, seq, hidden]`. Where the trainer routes it, bias,
    /// dropout and the residual add run as one fused op after the matmul.
    pub fn forward(&self, h: Tensor<B, 3>, residual: Tensor<B, 3>) -> Tensor<B, 3> {
        residual_layer_norm(&self.dense, &self.dropout, &self.layer_norm, h, residual)
    }
}

/// `norm(dropout(dense(h)) + residual)`, Hugging Face's `BertSelfOutput` and `BertOutput`:
/// bias, dropout and residual add as one fused op where routed
/// ([`fused::bias_dropout_add`]), else `nn::Linear`, `nn::Dropout` and an add.
pub(crate) fn residual_layer_norm<B: Backend>(
    dense: &Linear<B>,
    dropout: &Dropout,
    norm: &LayerNorm<B>,
    h: Tensor<B, 3>,
    residual: Tensor<B, 3>,
) -> Tensor<B, 3> {
    match &dense.bias {
        Some(bias) if fused::bias_dropout_add_routed::<B>() => {
            let projected = linear_op(h, dense.weight.val(), None);
            norm.forward(fused::bias_dropout_add(
                projected,
                bias.val(),
                residual,
                dropout.prob,
            ))
        }
        _ => norm.forward(dropout.forward(dense.forward(h)) + residual),
    }
}
