//! Batch norm in training mode, fused into CubeCL kernels:
//!
//! ```text
//! y = (x − mean) / sqrt(var + eps) · gamma + beta        [then max(y, 0) when fused with a ReLU]
//! ```
//!
//! with `mean` and the biased `var` taken per channel (axis 1) over every other axis of
//! `x: [N, C, ...]`, as `burn::nn::BatchNorm` and `torch.nn.BatchNorm2d` normalise in training.
//! Plain Burn spells this as about five launches forward and, through autodiff, about
//! eighteen backward per batch norm (ResNet-50's bulk); the fused pair is three each way,
//! with f32 accumulation whatever the storage dtype (f32, f16, bf16).
//!
//! - [`reference`](mod@reference): the same maths with plain Burn ops on any backend (ground
//!   truth of the tests beside `burn::nn::BatchNorm`);
//! - `kernel`: the `#[cube]` kernels (per-channel partial sums, statistics, normalisation;
//!   parameter gradients, input gradient);
//! - [`launch`]: their launchers on Burn's CubeCL primitive,
//!   [`burn_cubecl::tensor::CubeTensor`];
//! - [`BatchNormKernel`]: the backend extension, implemented for [`CubeBackend`] by the
//!   kernels, for the CPU backends by the reference, for `Autodiff<B>` (`autodiff`) as one
//!   graph node whose backward is the inner backend's fused backward, and for `Fusion<B>`
//!   (`fusion`) as one custom operation running the inner backend's kernels;
//! - [`counters`]: launch counters that prove the fused path ran.
//!
//! The forward returns per-channel `mean` and `rstd = 1 / sqrt(var + eps)` (f32 `[C]`), which
//! is all the backward needs besides `x`, `gamma`, the upstream gradient and, with a fused
//! ReLU, the forward's output. The running statistics are the caller's (`[C]`-sized ops).

mod autodiff;
mod backends;
pub mod counters;
mod fusion;
mod kernel;
pub mod launch;
pub mod reference;

pub use counters::{batch_norm_backward_launches, batch_norm_forward_launches};
pub use launch::{batch_norm_backward_cube, batch_norm_forward_cube};
pub use reference::{batch_norm_backward_reference, batch_norm_reference};

use burn::tensor::backend::Backend;
use burn::tensor::ops::FloatTensor;
use burn::tensor::{Shape, Tensor, TensorMetadata, TensorPrimitive};
#[cfg(doc)]
use burn_cubecl::CubeBackend;

use crate::fallback::{narrow, widen};

/// A backend that can run a training-mode batch norm (with an optional ReLU after it) as one
/// fused operation each way.
///
/// Shapes: `x`, `grad_out` and the output `[N, C, ...]` (rank ≥ 2); `gamma`, `beta` `[C]` in
/// the dtype of `x`; statistics `mean`, `rstd` `[C]`.
///
/// The provided methods compute with the plain-Burn [`reference`](mod@reference), so any
/// backend can opt in with an empty `impl`; [`CubeBackend`] overrides them with the CubeCL
/// kernels. Statistics are f32 for f32 and narrower inputs (half-precision inputs are computed
/// in f32 and the results cast back), and f64 for f64 inputs on the reference path.
pub trait BatchNormKernel: Backend {
    /// `(y, mean, rstd)`: `y = (x − mean) / sqrt(var + eps) · gamma + beta` (then `max(y, 0)`
    /// when `relu`) shaped and typed like `x`; `mean` and `rstd = 1 / sqrt(var + eps)` `[C]`,
    /// the biased variance over every axis but 1.
    fn fused_batch_norm_with_stats(
        x: FloatTensor<Self>,
        gamma: FloatTensor<Self>,
        beta: FloatTensor<Self>,
        eps: f64,
        relu: bool,
    ) -> (FloatTensor<Self>, FloatTensor<Self>, FloatTensor<Self>) {
        let (shape, dtype) = (x.shape(), x.dtype());
        let (y, mean, rstd) = batch_norm_reference(
            as_channels::<Self>(x),
            widen::<Self, 1>(gamma),
            widen::<Self, 1>(beta),
            eps,
            relu,
        );
        let primitive = |t: Tensor<Self, 1>| t.into_primitive().tensor();
        (narrow(y, dtype, shape), primitive(mean), primitive(rstd))
    }

    /// Gradients with respect to `(x, gamma, beta)`, shaped like `x`, `gamma`, `gamma` and in
    /// the dtype of `x`, from the upstream gradient and the statistics of
    /// [`Self::fused_batch_norm_with_stats`] for this `x`; `relu_output` is that call's `y`
    /// when it fused a ReLU.
    fn fused_batch_norm_backward(
        x: FloatTensor<Self>,
        gamma: FloatTensor<Self>,
        grad_out: FloatTensor<Self>,
        mean: FloatTensor<Self>,
        rstd: FloatTensor<Self>,
        relu_output: Option<FloatTensor<Self>>,
    ) -> (FloatTensor<Self>, FloatTensor<Self>, FloatTensor<Self>) {
        let (shape, dtype) = (x.shape(), x.dtype());
        let channels = Shape::new([shape[1]]);
        let (dx, dgamma, dbeta) = batch_norm_backward_reference(
            as_channels::<Self>(x),
            widen::<Self, 1>(gamma),
            as_channels::<Self>(grad_out),
            widen::<Self, 1>(mean),
            widen::<Self, 1>(rstd),
            relu_output.map(as_channels::<Self>),
        );
        (
            narrow(dx, dtype, shape),
            narrow(dgamma, dtype, channels.clone()),
            narrow(dbeta, dtype, channels),
        )
    }
}

/// `[N, C, ...]` primitive → `[N, C, S]` tensor in the accumulation dtype.
fn as_channels<B: Backend>(x: FloatTensor<B>) -> Tensor<B, 3> {
    let shape = x.shape();
    assert!(
        shape.num_dims() >= 2,
        "batch_norm: the input must be [N, C, ...], got shape {shape:?}"
    );
    let spatial = shape.as_slice()[2..].iter().product();
    widen::<B, 3>(B::float_reshape(
        x,
        Shape::new([shape[0], shape[1], spatial]),
    ))
}

/// Training-mode batch norm of `x: [N, C, ...]` → same shape and dtype, with `gamma`, `beta`:
/// `[C]`, then a ReLU when `relu`. Runs the backend's fused kernels where it has them
/// (CubeCL), else the plain-Burn [`reference`](mod@reference); returns the batch's `mean` and
/// biased `var` (`[C]`, detached) for the caller's running statistics.
pub fn batch_norm<B: BatchNormKernel, const D: usize>(
    x: Tensor<B, D>,
    gamma: Tensor<B, 1>,
    beta: Tensor<B, 1>,
    eps: f64,
    relu: bool,
) -> (Tensor<B, D>, Tensor<B, 1>, Tensor<B, 1>) {
    let dtype = x.dtype();
    let (y, mean, rstd) = B::fused_batch_norm_with_stats(
        x.into_primitive().tensor(),
        gamma.into_primitive().tensor(),
        beta.into_primitive().tensor(),
        eps,
        relu,
    );
    let stat = |t| Tensor::<B, 1>::from_primitive(TensorPrimitive::Float(t));
    // var = 1 / rstd² − eps, from the statistics the kernel already has.
    let var = stat(rstd).powi_scalar(2).recip().sub_scalar(eps);
    (
        Tensor::from_primitive(TensorPrimitive::Float(y)),
        stat(mean).cast(dtype),
        var.cast(dtype),
    )
}
