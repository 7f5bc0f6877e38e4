//! LayerNorm over the last dimension, fused into CubeCL kernels:
//!
//! ```text
//! y = (x − mean) / sqrt(var + eps) · gamma + beta
//! ```
//!
//! with `mean` and the biased `var` (divide by `width`) taken over the last dimension, as
//! `torch.nn.LayerNorm` and `burn::nn::LayerNorm` do. The fused kernels accumulate in f32
//! whatever the storage dtype (f32, f16, bf16) and store the result in the input's dtype.
//!
//! - [`reference`](mod@reference): the same maths with plain Burn ops on any backend (ground
//!   truth of the tests, fallback path);
//! - `kernel`: the `#[cube]` kernels (forward; backward dx; backward dgamma/dbeta);
//! - [`launch`]: their launchers on Burn's CubeCL primitive, [`CubeTensor`];
//! - [`LayerNormKernel`]: the backend extension, implemented for [`CubeBackend`] by the kernels,
//!   for the CPU backends by the reference, and for `Autodiff<B>` (`autodiff`) as one graph node
//!   whose backward is the inner backend's fused backward, and for `Fusion<B>` (`fusion`, hence
//!   `burn::backend::Wgpu`) as one custom operation (a fusion barrier) running the inner
//!   backend's kernels;
//! - [`counters`]: launch counters that prove the fused path ran.
//!
//! The forward saves per-row `mean` and `rstd = 1 / sqrt(var + eps)` (`[rows]`, `rows` being
//! the product of the leading dimensions), which is all the backward needs besides `x`, `gamma`
//! and the upstream gradient.

mod autodiff;
mod backends;
pub mod counters;
mod fusion;
mod kernel;
pub mod launch;
pub mod reference;

pub use counters::{layer_norm_backward_launches, layer_norm_forward_launches};
pub use launch::{layer_norm_backward_cube, layer_norm_forward_cube};
pub use reference::{
    layer_norm_backward_from_stats_reference, layer_norm_backward_reference, layer_norm_reference,
    layer_norm_stats_reference,
};

use burn::tensor::backend::Backend;
use burn::tensor::ops::FloatTensor;
use burn::tensor::{Shape, Tensor, TensorMetadata, TensorPrimitive};
#[cfg(doc)]
use burn_cubecl::{CubeBackend, tensor::CubeTensor};

use crate::fallback::{as_rows, narrow, widen};

/// A backend that can run LayerNorm over the last dimension as one fused operation.
///
/// Shapes: `x` and `grad_out` `[..., width]`; `gamma`, `beta` `[width]` (precondition, checked
/// by the fused path) in the dtype of `x`; statistics `mean`, `rstd` `[rows]`.
///
/// The provided methods compute with the plain-Burn [`reference`](mod@reference), so any
/// backend can opt in with an empty `impl`; [`CubeBackend`] overrides them with the CubeCL
/// kernels. Statistics are f32 for f32 and narrower inputs (half-precision inputs are computed
/// in f32 and the results cast back), and f64 for f64 inputs on the reference path.
pub trait LayerNormKernel: Backend {
    /// `y = (x − mean) / sqrt(var + eps) · gamma + beta`; `x: [..., width]` → same shape and
    /// dtype.
    fn fused_layer_norm(
        x: FloatTensor<Self>,
        gamma: FloatTensor<Self>,
        beta: FloatTensor<Self>,
        eps: f64,
    ) -> FloatTensor<Self> {
        Self::fused_layer_norm_with_stats(x, gamma, beta, eps).0
    }

    /// As [`Self::fused_layer_norm`], also returning the statistics the backward needs:
    /// `(y, mean, rstd)`, with `mean` and `rstd = 1 / sqrt(var + eps)` shaped `[rows]`.
    fn fused_layer_norm_with_stats(
        x: FloatTensor<Self>,
        gamma: FloatTensor<Self>,
        beta: FloatTensor<Self>,
        eps: f64,
    ) -> (FloatTensor<Self>, FloatTensor<Self>, FloatTensor<Self>) {
        let shape = x.shape();
        let dtype = x.dtype();
        let x = as_rows::<Self>(x);
        let rows = x.dims()[0];
        let (gamma, beta) = (widen::<Self, 1>(gamma), widen::<Self, 1>(beta));
        let (mean, rstd) = layer_norm_stats_reference(x.clone(), eps);
        let y = (x - mean.clone()) * rstd.clone() * gamma.unsqueeze::<2>() + beta.unsqueeze::<2>();
        (
            narrow(y, dtype, shape),
            mean.reshape([rows]).into_primitive().tensor(),
            rstd.reshape([rows]).into_primitive().tensor(),
        )
    }

    /// Gradients of LayerNorm with respect to `(x, gamma, beta)`, shaped like `x`, `gamma`,
    /// `gamma` and in the dtype of `x`, from the upstream gradient `grad_out` and the statistics
    /// `mean`, `rstd` returned by [`Self::fused_layer_norm_with_stats`] for this `x`.
    fn fused_layer_norm_backward(
        x: FloatTensor<Self>,
        gamma: FloatTensor<Self>,
        grad_out: FloatTensor<Self>,
        mean: FloatTensor<Self>,
        rstd: FloatTensor<Self>,
    ) -> (FloatTensor<Self>, FloatTensor<Self>, FloatTensor<Self>) {
        let shape = x.shape();
        let dtype = x.dtype();
        let width = shape[shape.num_dims() - 1];
        let x = as_rows::<Self>(x);
        let rows = x.dims()[0];
        let column = |stat: FloatTensor<Self>| widen::<Self, 1>(stat).reshape([rows, 1]);
        let (dx, dgamma, dbeta) = layer_norm_backward_from_stats_reference(
            x,
            widen::<Self, 1>(gamma),
            as_rows::<Self>(grad_out),
            column(mean),
            column(rstd),
        );
        (
            narrow(dx, dtype, shape),
            narrow(dgamma, dtype, Shape::new([width])),
            narrow(dbeta, dtype, Shape::new([width])),
        )
    }
}

/// LayerNorm over the last dimension of `x: [..., width]` → same shape and dtype, with
/// `gamma`, `beta`: `[width]`. Runs the backend's fused kernels where it has them (CubeCL),
/// else the plain-Burn [`reference`](mod@reference).
pub fn layer_norm<B: LayerNormKernel, const D: usize>(
    x: Tensor<B, D>,
    gamma: Tensor<B, 1>,
    beta: Tensor<B, 1>,
    eps: f64,
) -> Tensor<B, D> {
    Tensor::from_primitive(TensorPrimitive::Float(B::fused_layer_norm(
        x.into_primitive().tensor(),
        gamma.into_primitive().tensor(),
        beta.into_primitive().tensor(),
        eps,
    )))
}
