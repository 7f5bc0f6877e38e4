//! timm's Swin initialisation (`init_weights_vit_timm`) as Burn initializers.
//!
//! timm draws `Linear` weights from `trunc_normal_(std=0.02)` with its default cut-offs at
//! ±2 (absolute, that is ±100σ), which no draw reaches: the distribution is N(0, 0.02), which
//! Burn's [`Initializer::Normal`] draws. Biases start at 0. LayerNorm starts at γ = 1, β = 0
//! (Burn's default) and the patch-embedding convolution keeps PyTorch's default
//! `kaiming_uniform_(a=√5)`, uniform ±1/√fan_in for weight and bias, which Burn's default
//! `Conv2d` initializer equals.

use burn::module::{Initializer, Param};
use burn::nn::{Linear, LinearConfig};
use burn::tensor::Tensor;
use burn::tensor::backend::Backend;

/// Standard deviation of timm's `Linear` weights and relative position bias tables.
pub const INIT_STD: f64 = 0.02;

/// A `[d_input → d_output]` linear layer initialised as timm: weight N(0, 0.02), bias (if any)
/// zero (Burn would draw the bias from the weight's initializer).
pub fn linear<B: Backend>(
    d_input: usize,
    d_output: usize,
    bias: bool,
    device: &B::Device,
) -> Linear<B> {
    let mut layer = LinearConfig::new(d_input, d_output)
        .with_bias(bias)
        .with_initializer(Initializer::Normal {
            mean: 0.0,
            std: INIT_STD,
        })
        .init(device);
    if bias {
        layer.bias = Some(Param::from_tensor(Tensor::zeros([d_output], device)));
    }
    layer
}
