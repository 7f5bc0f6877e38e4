//! Reference GELUs with plain Burn tensor ops, for any backend: the ground truth of the tests
//! and the fallback of backends without the fused kernels.
//!
//! Everything is computed in the dtype of the inputs (run it on `NdArray<f64>` for an f64
//! reference); the fused kernels instead compute in f32 whatever the storage dtype.

use core::f64::consts::{FRAC_1_SQRT_2, PI};

use burn::tensor::Tensor;
use burn::tensor::activation::gelu;
use burn::tensor::backend::Backend;

/// The QuickGELU slope: `sigmoid(1.702 x)` approximates `Φ(x)`.
const QUICK_SLOPE: f64 = 1.702;

/// `sigmoid(1.702 x) = 1 / (1 + exp(−1.702 x))` in the dtype of `x`.
///
/// Not `burn::tensor::activation::sigmoid`: Burn's default implementation computes in f32
/// whatever the dtype, which would cap an f64 reference at f32 accuracy. `exp` overflowing to
/// `+inf` for very negative `x` gives exactly 0.
fn quick_sigmoid<B: Backend, const D: usize>(x: Tensor<B, D>) -> Tensor<B, D> {
    ((x * -QUICK_SLOPE).exp() + 1.0).recip()
}

/// QuickGELU, `y = x · sigmoid(1.702 x)`; any shape → same shape.
pub fn quick_gelu_reference<B: Backend, const D: usize>(x: Tensor<B, D>) -> Tensor<B, D> {
    x.clone() * quick_sigmoid(x)
}

/// QuickGELU backward, `dx = dy · (s + 1.702 x s (1 − s))` with `s = sigmoid(1.702 x)`;
/// `x`, `grad_out`: same shape → `dx` of that shape.
pub fn quick_gelu_backward_reference<B: Backend, const D: usize>(
    x: Tensor<B, D>,
    grad_out: Tensor<B, D>,
) -> Tensor<B, D> {
    let s = quick_sigmoid(x.clone());
    let slope = x * s.clone() * (s.clone().neg() + 1.0) * QUICK_SLOPE;
    grad_out * (s + slope)
}

/// `x + bias` with `bias: [width]` broadcast over the leading dimensions of `x: [..., width]`.
fn add_bias<B: Backend, const D: usize>(
    x: Tensor<B, D>,
    bias: Option<Tensor<B, 1>>,
) -> Tensor<B, D> {
    match bias {
        Some(bias) => x + bias.unsqueeze::<D>(),
        None => x,
    }
}

/// Exact GELU derivative `g'(z) = Φ(z) + z φ(z)`, with `Φ(z) = ½ (1 + erf(z / √2))` and
/// `φ(z) = exp(−z² / 2) / √(2π)`.
pub fn gelu_grad_reference<B: Backend, const D: usize>(z: Tensor<B, D>) -> Tensor<B, D> {
    let cdf = ((z.clone() * FRAC_1_SQRT_2).erf() + 1.0) * 0.5;
    let pdf = (z.clone().square() * -0.5).exp() / (2.0 * PI).sqrt();
    cdf + z * pdf
}

/// Bias + exact GELU, `y = gelu(x + bias)` (`burn::tensor::activation::gelu`, the erf form of
/// `torch.nn.functional.gelu`); `x: [..., width]`, `bias: [width]` or `None` → shape of `x`.
pub fn bias_gelu_reference<B: Backend, const D: usize>(
    x: Tensor<B, D>,
    bias: Option<Tensor<B, 1>>,
) -> Tensor<B, D> {
    gelu(add_bias(x, bias))
}

/// Bias + exact GELU backward: `dx = dy · gelu'(x + bias)` (shape of `x`) and, when `bias` is
/// given, `dbias = Σ dx` over every leading dimension (`[width]`).
pub fn bias_gelu_backward_reference<B: Backend, const D: usize>(
    x: Tensor<B, D>,
    bias: Option<Tensor<B, 1>>,
    grad_out: Tensor<B, D>,
) -> (Tensor<B, D>, Option<Tensor<B, 1>>) {
    let has_bias = bias.is_some();
    let dx = grad_out * gelu_grad_reference(add_bias(x, bias));
    let dbias = has_bias.then(|| {
        let dims = dx.dims();
        let width = dims[D - 1];
        let rows = dims[..D - 1].iter().product::<usize>();
        dx.clone()
            .reshape([rows, width])
            .sum_dim(0)
            .reshape([width])
    });
    (dx, dbias)
}
