//! Multi-head self-attention as Hugging Face's `BertSelfAttention` + `BertSelfOutput`.

use super::config::BertConfig;
use super::init::linear;
use super::layer::residual_layer_norm;
use burn::module::Module;
use burn::nn::{Dropout, DropoutConfig, LayerNorm, LayerNormConfig, Linear};
use burn::tensor::Tensor;
use burn::tensor::activation::softmax;
use burn::tensor::backend::Backend;

/// Hugging Face `BertSelfAttention`: query, key and value projections and scaled dot-product
/// attention over `num_attention_heads` heads ("eager" attention, softmax in the scores' dtype
/// — f32 under autocast, which keeps softmax in f32).
#[derive(Module, Debug)]
pub struct BertSelfAttention<B: Backend> {
    /// `[hidden → hidden]`.
    pub query: Linear<B>,
    /// `[hidden → hidden]`.
    pub key: Linear<B>,
    /// `[hidden → hidden]`.
    pub value: Linear<B>,
    dropout: Dropout,
    heads: usize,
}

impl<B: Backend> BertSelfAttention<B> {
    /// Random initialisation.
    pub fn new(c: &BertConfig, device: &B::Device) -> Self {
        assert!(
            c.hidden_size.is_multiple_of(c.num_attention_heads),
            "hidden_size {} is not a multiple of num_attention_heads {}",
            c.hidden_size,
            c.num_attention_heads
        );
        let h = c.hidden_size;
        Self {
            query: linear(c, h, h, device),
            key: linear(c, h, h, device),
            value: linear(c, h, h, device),
            dropout: DropoutConfig::new(c.attention_probs_dropout_prob).init(),
            heads: c.num_attention_heads,
        }
    }

    /// x `[rows, seq, hidden]`, bias `[rows, 1, seq, seq]` (see `BertInput::attention_bias`)
    /// → context `[rows, seq, hidden]`.
    pub fn forward(&self, x: Tensor<B, 3>, bias: Tensor<B, 4>) -> Tensor<B, 3> {
        let [rows, seq, hidden] = x.dims();
        let head_dim = hidden / self.heads;
        // [rows, seq, hidden] → [rows, heads, seq, head_dim]
        let split = |t: Tensor<B, 3>| t.reshape([rows, seq, self.heads, head_dim]).swap_dims(1, 2);
        let q = split(self.query.forward(x.clone()));
        let k = split(self.key.forward(x.clone()));
        let v = split(self.value.forward(x));
        let scores = q
            .matmul(k.swap_dims(2, 3))
            .mul_scalar(1.0 / (head_dim as f64).sqrt());
        let scores = scores + bias.expand([rows, self.heads, seq, seq]);
        let probs = self.dropout.forward(softmax(scores, 3));
        probs.matmul(v).swap_dims(1, 2).reshape([rows, seq, hidden])
    }
}

/// Hugging Face `BertSelfOutput`: projection, dropout, residual, LayerNorm.
#[derive(Module, Debug)]
pub struct BertSelfOutput<B: Backend> {
    /// `[hidden → hidden]`.
    pub dense: Linear<B>,
    /// Post-residual normalisation (Hugging Face `LayerNorm`).
    pub layer_norm: LayerNorm<B>,
    dropout: Dropout,
}

impl<B: Backend> BertSelfOutput<B> {
    /// Random initialisation.
    pub fn new(c: &BertConfig, device: &B::Device) -> Self {
        Self {
            dense: linear(c, c.hidden_size, c.hidden_size, device),
            layer_norm: LayerNormConfig::new(c.hidden_size)
                .with_epsilon(c.layer_norm_eps)
                .init(device),
            dropout: DropoutConfig::new(c.hidden_dropout_prob).init(),
        }
    }

    /// context, residual `[rows, seq, hidden]` → `[rows, seq, hidden]`.
    pub fn forward(&self, context: Tensor<B, 3>, residual: Tensor<B, 3>) -> Tensor<B, 3> {
        residual_layer_norm(
            &self.dense,
            &self.dropout,
            &self.layer_norm,
            context,
            residual,
        )
    }
}

/// Hugging Face `BertAttention` (its `self` is `self_attn` here: `self` is a Rust keyword).
#[derive(Module, Debug)]
pub struct BertAttention<B: Backend> {
    /// Scaled dot-product attention.
    pub self_attn: BertSelfAttention<B>,
    /// Projection, residual and normalisation.
    pub output: BertSelfOutput<B>,
}

impl<B: Backend> BertAttention<B> {
    /// Random initialisation.
    pub fn new(c: &BertConfig, device: &B::Device) -> Self {
        Self {
            self_attn: BertSelfAttention::new(c, device),
            output: BertSelfOutput::new(c, device),
        }
    }

    /// x `[rows, seq, hidden]`, bias `[rows, 1, seq, seq]` → `[rows, seq, hidden]`.
    pub fn forward(&self, x: Tensor<B, 3>, bias: Tensor<B, 4>) -> Tensor<B, 3> {
        let context = self.self_attn.forward(x.clone(), bias);
        self.output.forward(context, x)
    }
}
