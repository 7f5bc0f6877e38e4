//! Fused ops a model can call on any backend: each runs a fused kernel where the trainer has
//! routed one for the model's backend ([`crate::routes`]; on an acc stack, `[kernels]` keys
//! of the recipe), else the same maths with plain Burn ops. Routed calls bump a kernel
//! counter ([`crate::counters`]).
//!
//! They are called outside `Acc`'s op dispatch, so autocast does not cast their inputs: the
//! bias (an f32 parameter) is cast to the activation's dtype here, as `nn::Linear` under
//! autocast would have added it in that dtype.

use crate::counters;
use crate::routes::{bias_dropout_add_route, bias_gelu_route, quick_gelu_route};
use burn::tensor::activation::{gelu, sigmoid};
use burn::tensor::backend::Backend;
use burn::tensor::{Distribution, Tensor, TensorPrimitive};

fn float<B: Backend, const D: usize>(tensor: Tensor<B, D>) -> burn::tensor::ops::FloatTensor<B> {
    tensor.into_primitive().tensor()
}

fn tensor<B: Backend, const D: usize>(
    primitive: burn::tensor::ops::FloatTensor<B>,
) -> Tensor<B, D> {
    Tensor::from_primitive(TensorPrimitive::Float(primitive))
}

/// `bias` in the dtype of `like`.
fn bias_like<B: Backend, const D: usize>(bias: Tensor<B, 1>, like: &Tensor<B, D>) -> Tensor<B, 1> {
    let dtype = like.dtype();
    if bias.dtype() == dtype {
        bias
    } else {
        bias.cast(dtype)
    }
}

/// Whether [`bias_gelu`] runs a fused kernel for `B` on this thread. A model can keep its
/// usual path (e.g. `nn::Linear` then `gelu`) when it does not.
pub fn bias_gelu_routed<B: Backend>() -> bool {
    bias_gelu_route::<B>().is_some()
}

/// `gelu(x + bias)`, exact (erf) GELU: `x: [..., width]`, `bias: [width]` → like `x`.
pub fn bias_gelu<B: Backend, const D: usize>(x: Tensor<B, D>, bias: Tensor<B, 1>) -> Tensor<B, D> {
    let bias = bias_like(bias, &x);
    match bias_gelu_route::<B>() {
        Some(fused) => {
            counters::bump_kernel("fused_bias_gelu");
            tensor(fused(float(x), float(bias)))
        }
        None => gelu(x + bias.unsqueeze()),
    }
}

/// `x·sigmoid(1.702·x)` (QuickGELU), any shape → like `x`.
pub fn quick_gelu<B: Backend, const D: usize>(x: Tensor<B, D>) -> Tensor<B, D> {
    match quick_gelu_route::<B>() {
        Some(fused) => {
            counters::bump_kernel("fused_quick_gelu");
            tensor(fused(float(x)))
        }
        None => x.clone() * sigmoid(x.mul_scalar(1.702)),
    }
}

/// Whether [`bias_dropout_add`] runs a fused kernel for `B` on this thread.
pub fn bias_dropout_add_routed<B: Backend>() -> bool {
    bias_dropout_add_route::<B>().is_some()
}

/// `residual + dropout(x + bias, p)`: `x`, `residual: [..., width]`, `bias: [width]` → like
/// `x`. As `nn::Dropout`, dropout applies only while autodiff is on (training), and kept
/// values are scaled by `1 / (1 − p)`. Routed: one fused op whose mask is regenerated in the
/// backward from a seed drawn on the device. Else Burn ops with `nn::Dropout`'s Bernoulli
/// mask (a different generator, so the two paths draw different masks).
pub fn bias_dropout_add<B: Backend, const D: usize>(
    x: Tensor<B, D>,
    bias: Tensor<B, 1>,
    residual: Tensor<B, D>,
    p: f64,
) -> Tensor<B, D> {
    let p = if B::ad_enabled(&x.device()) { p } else { 0.0 };
    let bias = bias_like(bias, &x);
    match bias_dropout_add_route::<B>() {
        Some(fused) => {
            counters::bump_kernel("fused_bias_dropout_add");
            let residual = residual.cast(x.dtype());
            tensor(fused(float(x), float(bias), float(residual), p))
        }
        None => {
            let y = x + bias.unsqueeze();
            let y = if p == 0.0 {
                y
            } else {
                let keep = y.random_like(Distribution::Bernoulli(1.0 - p));
                y * keep * (1.0 / (1.0 - p))
            };
            y + residual
        }
    }
}
