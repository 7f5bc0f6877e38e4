//! GELU activations fused into CubeCL kernels, forward and backward:
//!
//! ```text
//! quick_gelu(x)      = x · sigmoid(1.702 x)
//! bias_gelu(x, bias) = gelu(x + bias),  gelu(z) = ½ z (1 + erf(z / √2))
//! ```
//!
//! QuickGELU is the sigmoid approximation of GELU used by OpenAI CLIP; `gelu` is the exact
//! (erf) GELU of `torch.nn.functional.gelu` and `burn::tensor::activation::gelu`, with the bias
//! of the preceding linear layer folded in (the MLP of a transformer block) and broadcast over
//! the last dimension. The fused kernels compute in f32 whatever the storage dtype (f32, f16,
//! bf16) and store results in the input's dtype. Each is one pass over memory; the bias
//! gradient adds a small deterministic column reduction.
//!
//! - [`reference`](mod@reference): the same maths with plain Burn ops on any backend (ground
//!   truth of the tests, fallback path);
//! - `math`, `kernel`, `bias_kernel`: the `#[cube]` formulas and kernels;
//! - [`launch`]: their launchers on Burn's CubeCL primitive, [`CubeTensor`];
//! - [`GeluKernel`]: the backend extension, implemented for [`CubeBackend`] by the kernels, for
//!   the CPU backends by the reference, for `Autodiff<B>` (`autodiff`) as one graph node whose
//!   backward is the inner backend's fused backward, and for `Fusion<B>` (`fusion`, hence
//!   `burn::backend::Wgpu`) as one custom operation running the inner backend's kernels;
//! - [`counters`]: launch counters that prove the fused path ran.
//!
//! The backward recomputes the activation from `x` (and `bias`) rather than saving anything
//! from the forward: the recomputation is a few flops per element of a memory-bound pass.

mod autodiff;
mod backends;
mod bias_kernel;
pub mod counters;
mod fallback;
mod fusion;
mod kernel;
pub mod launch;
mod math;
pub mod reference;

pub use counters::{
    bias_gelu_backward_launches, bias_gelu_forward_launches, quick_gelu_backward_launches,
    quick_gelu_forward_launches,
};
pub use launch::{
    bias_gelu_backward_cube, bias_gelu_forward_cube, quick_gelu_backward_cube,
    quick_gelu_forward_cube,
};
pub use reference::{
    bias_gelu_backward_reference, bias_gelu_reference, gelu_grad_reference,
    quick_gelu_backward_reference, quick_gelu_reference,
};

use burn::tensor::backend::Backend;
use burn::tensor::ops::FloatTensor;
use burn::tensor::{Shape, Tensor, TensorMetadata, TensorPrimitive};
#[cfg(doc)]
use burn_cubecl::{CubeBackend, tensor::CubeTensor};

use fallback::{as_rows, flat, narrow, vector};

/// A backend that can run the GELU activations as fused operations.
///
/// Shapes: `x` and `grad_out` any shape for QuickGELU, `[..., width]` for bias + GELU, with
/// `bias` `[width]` in the dtype of `x` (precondition, checked by the fused path). Every result
/// has the dtype of `x`.
///
/// The provided methods compute with the plain-Burn [`reference`](mod@reference), so any
/// backend can opt in with an empty `impl`; [`CubeBackend`] overrides them with the CubeCL
/// kernels. Half-precision inputs are computed in f32 on both paths and the results cast back.
pub trait GeluKernel: Backend {
    /// QuickGELU, `y = x · sigmoid(1.702 x)`; `x` any shape → same shape and dtype.
    fn fused_quick_gelu(x: FloatTensor<Self>) -> FloatTensor<Self> {
        let (shape, dtype) = (x.shape(), x.dtype());
        narrow(quick_gelu_reference(flat::<Self>(x)), dtype, shape)
    }

    /// Gradient of QuickGELU with respect to `x` from the upstream gradient `grad_out` (shaped
    /// like `x`): `dx = grad_out · (s + 1.702 x s (1 − s))`, `s = sigmoid(1.702 x)`.
    fn fused_quick_gelu_backward(
        x: FloatTensor<Self>,
        grad_out: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        let (shape, dtype) = (x.shape(), x.dtype());
        let dx = quick_gelu_backward_reference(flat::<Self>(x), flat::<Self>(grad_out));
        narrow(dx, dtype, shape)
    }

    /// Bias + exact GELU, `y = gelu(x + bias)`; `x: [..., width]`, `bias: [width]` or `None`
    /// (plain GELU) → shape and dtype of `x`.
    fn fused_bias_gelu(x: FloatTensor<Self>, bias: Option<FloatTensor<Self>>) -> FloatTensor<Self> {
        let (shape, dtype) = (x.shape(), x.dtype());
        match bias {
            Some(bias) => {
                let y = bias_gelu_reference(as_rows::<Self>(x), Some(vector::<Self>(bias)));
                narrow(y, dtype, shape)
            }
            // Without a bias any shape works, rank 0 included.
            None => narrow(bias_gelu_reference(flat::<Self>(x), None), dtype, shape),
        }
    }

    /// Gradients of bias + exact GELU from `(x, bias, grad_out)`: `dx = grad_out · gelu'(x +
    /// bias)` shaped like `x`, and `dbias = Σ dx` over the leading dimensions (`[width]`),
    /// present iff `bias` is. Both in the dtype of `x`.
    fn fused_bias_gelu_backward(
        x: FloatTensor<Self>,
        bias: Option<FloatTensor<Self>>,
        grad_out: FloatTensor<Self>,
    ) -> (FloatTensor<Self>, Option<FloatTensor<Self>>) {
        let (shape, dtype) = (x.shape(), x.dtype());
        let Some(bias) = bias else {
            let (dx, _) =
                bias_gelu_backward_reference(flat::<Self>(x), None, flat::<Self>(grad_out));
            return (narrow(dx, dtype, shape), None);
        };
        let width = shape[shape.num_dims() - 1];
        let (dx, dbias) = bias_gelu_backward_reference(
            as_rows::<Self>(x),
            Some(vector::<Self>(bias)),
            as_rows::<Self>(grad_out),
        );
        let dbias = dbias.expect("a bias was given");
        (
            narrow(dx, dtype, shape),
            Some(narrow(dbias, dtype, Shape::new([width]))),
        )
    }
}

/// QuickGELU, `x · sigmoid(1.702 x)`, of `x` (any shape) → same shape and dtype. Runs the
/// backend's fused kernel where it has one (CubeCL), else the plain-Burn
/// [`reference`](mod@reference); differentiable on `Autodiff<B>` as one graph node.
pub fn quick_gelu<B: GeluKernel, const D: usize>(x: Tensor<B, D>) -> Tensor<B, D> {
    Tensor::from_primitive(TensorPrimitive::Float(B::fused_quick_gelu(
        x.into_primitive().tensor(),
    )))
}

/// Exact GELU of `x + bias`, `x: [..., width]`, `bias: [width]` broadcast over the leading
/// dimensions (or `None`: plain GELU) → shape and dtype of `x`. Runs the backend's fused kernel
/// where it has one (CubeCL), else the plain-Burn [`reference`](mod@reference); differentiable
/// on `Autodiff<B>` with respect to `x` and `bias` as one graph node.
pub fn bias_gelu<B: GeluKernel, const D: usize>(
    x: Tensor<B, D>,
    bias: Option<Tensor<B, 1>>,
) -> Tensor<B, D> {
    Tensor::from_primitive(TensorPrimitive::Float(B::fused_bias_gelu(
        x.into_primitive().tensor(),
        bias.map(|b| b.into_primitive().tensor()),
    )))
}
