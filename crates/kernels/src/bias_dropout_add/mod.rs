//! The transformer residual pattern, bias + dropout + residual add, fused into CubeCL kernels:
//!
//! ```text
//! y = residual + dropout(x + bias, p)
//! ```
//!
//! with inverted dropout (kept elements scaled by `1 / (1 − p)`, as
//! `torch.nn.functional.dropout`). `x`, `residual`: `[..., width]`, same shape and dtype;
//! `bias`: `[width]` or absent; `0 ≤ p < 1`. The fused kernels compute in f32 whatever the
//! storage dtype (f32, f16, bf16) and store the result in the input's dtype.
//!
//! The keep-mask is a pure function of a 64-bit seed and each element's row-major linear
//! index (a counter-based generator, [`mask`]), so the backward regenerates it instead of
//! saving it: training memory is that of the forward's inputs, with no mask tensor. The same
//! function runs on the host, so the reference reproduces the kernels' mask bit for bit.
//!
//! - [`mask`]: the hash and the host mask;
//! - [`reference`](mod@reference): the same maths with plain Burn ops and the host mask (ground
//!   truth of the tests, fallback path);
//! - `kernel`: the `#[cube]` kernels (forward; backward dx; backward dx + dbias columns);
//! - [`launch`]: their launchers on Burn's CubeCL primitive, [`CubeTensor`];
//! - [`BiasDropoutAddKernel`]: the backend extension, implemented for [`CubeBackend`] by the
//!   kernels, for the CPU backends by the reference, for `Autodiff<B>` (`autodiff`) as one graph
//!   node that keeps only `p` and the seed, and for `Fusion<B>` (`fusion`, hence
//!   `burn::backend::Wgpu`) as one custom operation (a fusion barrier) running the inner
//!   backend's kernels;
//! - [`counters`]: launch counters that prove the fused path ran.
//!
//! Gradients: `d_residual = dy`; `dx = dy · mask / (1 − p)`; `dbias = Σ_rows dx`.

mod autodiff;
mod backends;
pub mod counters;
mod fallback;
mod fusion;
mod kernel;
pub mod launch;
pub mod mask;
pub mod reference;

pub use counters::{bias_dropout_add_backward_launches, bias_dropout_add_forward_launches};
pub use launch::{bias_dropout_add_backward_cube, bias_dropout_add_forward_cube};
pub use mask::{dropout_keep_mask, dropout_keep_mask_tensor};
pub use reference::{
    bias_dropout_add_backward_reference, bias_dropout_add_reference, dropout_reference,
};

use burn::tensor::backend::Backend;
use burn::tensor::ops::FloatTensor;
use burn::tensor::{Shape, Tensor, TensorMetadata, TensorPrimitive};
#[cfg(doc)]
use burn_cubecl::{CubeBackend, tensor::CubeTensor};

use fallback::{as_rows, narrow, widen};
use mask::check_probability;

/// A backend that can run `y = residual + dropout(x + bias, p)` as one fused operation, and
/// its backward with the mask regenerated from the seed.
///
/// Shapes: `x`, `residual`, `grad_out` `[..., width]`, one dtype; `bias` `[width]` in that
/// dtype, or `None`. `p` in `[0, 1)`; `seed` selects the mask ([`mask`]); the same `(p, seed)`
/// must be given to the forward and its backward.
///
/// The provided methods compute with the plain-Burn [`reference`](mod@reference) and the host
/// mask, so any backend can opt in with an empty `impl`; [`CubeBackend`] overrides them with
/// the CubeCL kernels. Half-precision inputs are computed in f32 on the reference path too,
/// and the results cast back.
pub trait BiasDropoutAddKernel: Backend {
    /// `y = residual + dropout(x + bias, p)` → shape and dtype of `x`. At `p = 0` this is the
    /// inference form `residual + x + bias` (no mask).
    fn fused_bias_dropout_add(
        x: FloatTensor<Self>,
        bias: Option<FloatTensor<Self>>,
        residual: FloatTensor<Self>,
        p: f64,
        seed: u64,
    ) -> FloatTensor<Self> {
        let shape = x.shape();
        let dtype = x.dtype();
        let y = bias_dropout_add_reference(
            as_rows::<Self>(x),
            bias.map(widen::<Self, 1>),
            as_rows::<Self>(residual),
            p,
            seed,
        );
        narrow(y, dtype, shape)
    }

    /// Gradients of [`Self::fused_bias_dropout_add`] with the same `p` and `seed`, from the
    /// upstream gradient `grad_out`: `(dx, dbias)`, with `dx = grad_out · mask / (1 − p)`
    /// shaped like `grad_out` and `dbias = Σ_rows dx` (`[width]`, `Some` only when
    /// `with_bias`), both in the dtype of `grad_out`. The residual's gradient is `grad_out`.
    fn fused_bias_dropout_add_backward(
        grad_out: FloatTensor<Self>,
        p: f64,
        seed: u64,
        with_bias: bool,
    ) -> (FloatTensor<Self>, Option<FloatTensor<Self>>) {
        let shape = grad_out.shape();
        let dtype = grad_out.dtype();
        let width = shape[shape.num_dims() - 1];
        let (dx, dbias) =
            bias_dropout_add_backward_reference(as_rows::<Self>(grad_out), p, seed, with_bias);
        (
            narrow(dx, dtype, shape),
            dbias.map(|dbias| narrow(dbias, dtype, Shape::new([width]))),
        )
    }
}

/// Panics unless `residual` has the shape of `x`, `bias` is `[width]` and `0 ≤ p < 1`.
fn check_inputs<B: Backend, const D: usize>(
    x: &Tensor<B, D>,
    bias: Option<&Tensor<B, 1>>,
    residual: &Tensor<B, D>,
    p: f64,
) {
    check_probability(p);
    let dims = x.dims();
    assert_eq!(
        residual.dims(),
        dims,
        "bias_dropout_add: residual must have the shape of x"
    );
    if let Some(bias) = bias {
        assert_eq!(
            bias.dims(),
            [dims[D - 1]],
            "bias_dropout_add: bias must have shape [width] = [{}]",
            dims[D - 1]
        );
    }
}

/// Training form: `y = residual + dropout(x + bias, p)` with the mask of `seed`.
///
/// `x`, `residual`: `[..., width]`, same shape and dtype; `bias`: `[width]` or `None`;
/// `0 ≤ p < 1` (panics otherwise). Returns `y` with the shape and dtype of `x`. Runs the
/// backend's fused kernels where it has them (CubeCL), else the plain-Burn reference; under
/// `Autodiff` it is one graph node whose backward regenerates the mask from `seed`.
///
/// Give every call a fresh seed (e.g. a step counter mixed with a layer id): the same seed on
/// the same shape drops the same elements.
pub fn bias_dropout_add<B: BiasDropoutAddKernel, const D: usize>(
    x: Tensor<B, D>,
    bias: Option<Tensor<B, 1>>,
    residual: Tensor<B, D>,
    p: f64,
    seed: u64,
) -> Tensor<B, D> {
    check_inputs(&x, bias.as_ref(), &residual, p);
    Tensor::from_primitive(TensorPrimitive::Float(B::fused_bias_dropout_add(
        x.into_primitive().tensor(),
        bias.map(|bias| bias.into_primitive().tensor()),
        residual.into_primitive().tensor(),
        p,
        seed,
    )))
}

/// Inference form: `y = residual + x + bias`, no dropout and no random numbers; shapes and
/// dtype as [`bias_dropout_add`]. Still one fused kernel (and one autodiff node).
pub fn bias_dropout_add_inference<B: BiasDropoutAddKernel, const D: usize>(
    x: Tensor<B, D>,
    bias: Option<Tensor<B, 1>>,
    residual: Tensor<B, D>,
) -> Tensor<B, D> {
    bias_dropout_add(x, bias, residual, 0.0, 0)
}
