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
//! The keep-mask is a pure function of a seed and each element's row-major linear index (a
//! counter-based generator, [`mask`]), so the backward regenerates it instead of saving it:
//! training memory is that of the forward's inputs, with no mask tensor. The same function runs
//! on the host, so the reference reproduces the kernels' mask bit for bit.
//!
//! The seed is a device tensor (Int `[2]`, two 31-bit words, [`seed`]) that the kernels read
//! themselves. In training, draw it on the device with [`dropout_seed`] (the backend's random
//! generator, so `B::seed` makes it deterministic and gradient checkpointing's replay
//! reproduces it) and call [`bias_dropout_add_device_seed`]: nothing is read back to the host,
//! and every call gets a fresh mask. [`bias_dropout_add`] takes a host `u64` instead (tests,
//! reproducible runs), uploaded as the same tensor form ([`DropoutSeed`]).
//!
//! - [`seed`]: the seed's representation, host and device, and [`dropout_seed`];
//! - [`mask`]: the hash and the host mask;
//! - [`reference`](mod@reference): the same maths with plain Burn ops and the host mask (ground
//!   truth of the tests, fallback path);
//! - `kernel`: the `#[cube]` kernels (forward; backward dx; backward dx + dbias columns);
//! - [`launch`]: their launchers on Burn's CubeCL primitive, [`CubeTensor`];
//! - [`BiasDropoutAddKernel`]: the backend extension, implemented for [`CubeBackend`] by the
//!   kernels, for the CPU backends by the reference, for `Autodiff<B>` (`autodiff`) as one graph
//!   node that keeps only `p` and the seed tensor, and for `Fusion<B>` (`fusion`, hence
//!   `burn::backend::Wgpu`) as one custom operation (a fusion barrier, the seed one of its
//!   inputs) running the inner backend's kernels;
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
pub mod seed;

pub use counters::{bias_dropout_add_backward_launches, bias_dropout_add_forward_launches};
pub use fallback::read_seed;
pub use launch::{bias_dropout_add_backward_cube, bias_dropout_add_forward_cube};
pub use mask::{dropout_keep_mask, dropout_keep_mask_tensor};
pub use reference::{
    bias_dropout_add_backward_reference, bias_dropout_add_reference, dropout_reference,
};
pub use seed::{DropoutSeed, dropout_seed};

use burn::tensor::backend::Backend;
use burn::tensor::ops::{FloatTensor, IntTensor};
use burn::tensor::{Int, Shape, Tensor, TensorMetadata, TensorPrimitive};
#[cfg(doc)]
use burn_cubecl::{CubeBackend, tensor::CubeTensor};

use crate::fallback::{as_rows, narrow, widen};
use mask::check_probability;
use seed::SEED_WORDS;

/// A backend that can run `y = residual + dropout(x + bias, p)` as one fused operation, and
/// its backward with the mask regenerated from the seed.
///
/// Shapes: `x`, `residual`, `grad_out` `[..., width]`, one dtype; `bias` `[width]` in that
/// dtype, or `None`. `p` in `[0, 1)`; `seed` selects the mask ([`mask`]): an Int tensor `[2]`
/// on the device, holding a [`DropoutSeed`]'s two words (drawn by [`dropout_seed`], or uploaded
/// by [`DropoutSeed::to_tensor`]); `None` is allowed only at `p = 0`, where no mask exists
/// (panics otherwise). The same `(p, seed)` must be given to the forward and its backward.
///
/// The provided methods compute with the plain-Burn [`reference`](mod@reference) and the host
/// mask, so any backend can opt in with an empty `impl`; they read the seed tensor back to the
/// host (a synchronisation), which is why only the CPU backends take them. [`CubeBackend`]
/// overrides them with the CubeCL kernels, which read the seed on the device. Half-precision
/// inputs are computed in f32 on the reference path too, and the results cast back.
pub trait BiasDropoutAddKernel: Backend {
    /// `y = residual + dropout(x + bias, p)` → shape and dtype of `x`. At `p = 0` this is the
    /// inference form `residual + x + bias` (no mask).
    fn fused_bias_dropout_add(
        x: FloatTensor<Self>,
        bias: Option<FloatTensor<Self>>,
        residual: FloatTensor<Self>,
        p: f64,
        seed: Option<IntTensor<Self>>,
    ) -> FloatTensor<Self> {
        let seed = read_seed::<Self>(seed, p);
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
        seed: Option<IntTensor<Self>>,
        with_bias: bool,
    ) -> (FloatTensor<Self>, Option<FloatTensor<Self>>) {
        let seed = read_seed::<Self>(seed, p);
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

/// Panics unless `residual` has the shape of `x`, `bias` is `[width]`, `0 ≤ p < 1` and the
/// seed (if any) is `[2]`.
fn check_inputs<B: Backend, const D: usize>(
    x: &Tensor<B, D>,
    bias: Option<&Tensor<B, 1>>,
    residual: &Tensor<B, D>,
    p: f64,
    seed: Option<&Tensor<B, 1, Int>>,
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
    if let Some(seed) = seed {
        assert_eq!(
            seed.dims(),
            [SEED_WORDS],
            "bias_dropout_add: the dropout seed must have shape [{SEED_WORDS}]"
        );
    }
}

/// The one call behind the public forms; `seed` is `None` only at `p = 0`.
fn fused<B: BiasDropoutAddKernel, const D: usize>(
    x: Tensor<B, D>,
    bias: Option<Tensor<B, 1>>,
    residual: Tensor<B, D>,
    p: f64,
    seed: Option<Tensor<B, 1, Int>>,
) -> Tensor<B, D> {
    check_inputs(&x, bias.as_ref(), &residual, p, seed.as_ref());
    Tensor::from_primitive(TensorPrimitive::Float(B::fused_bias_dropout_add(
        x.into_primitive().tensor(),
        bias.map(|bias| bias.into_primitive().tensor()),
        residual.into_primitive().tensor(),
        p,
        seed.map(Tensor::into_primitive),
    )))
}

/// Training form with a device seed: `y = residual + dropout(x + bias, p)` with the mask of
/// `seed`, an Int tensor `[2]` on the device of `x` (draw it with [`dropout_seed`], one per
/// call).
///
/// `x`, `residual`: `[..., width]`, same shape and dtype; `bias`: `[width]` or `None`;
/// `0 ≤ p < 1` (panics otherwise). Returns `y` with the shape and dtype of `x`. Runs the
/// backend's fused kernels where it has them (CubeCL), which read the seed on the device, so
/// nothing synchronises with the host; else the plain-Burn reference, which reads it back.
/// Under `Autodiff` it is one graph node that keeps the seed tensor, and whose backward
/// regenerates the mask from it.
pub fn bias_dropout_add_device_seed<B: BiasDropoutAddKernel, const D: usize>(
    x: Tensor<B, D>,
    bias: Option<Tensor<B, 1>>,
    residual: Tensor<B, D>,
    p: f64,
    seed: Tensor<B, 1, Int>,
) -> Tensor<B, D> {
    fused(x, bias, residual, p, Some(seed))
}

/// Training form with a host seed: [`bias_dropout_add_device_seed`] with the seed tensor of
/// [`DropoutSeed::from_u64`]`(seed)`, uploaded to the device of `x` (an upload, not a
/// synchronisation; none at `p = 0`). Shapes, dtypes and panics as there.
///
/// For tests and reproducible runs; give every call a fresh seed (e.g. a step counter mixed
/// with a layer id): the same seed on the same shape drops the same elements.
pub fn bias_dropout_add<B: BiasDropoutAddKernel, const D: usize>(
    x: Tensor<B, D>,
    bias: Option<Tensor<B, 1>>,
    residual: Tensor<B, D>,
    p: f64,
    seed: u64,
) -> Tensor<B, D> {
    let seed = (p > 0.0).then(|| DropoutSeed::from_u64(seed).to_tensor::<B>(&x.device()));
    fused(x, bias, residual, p, seed)
}

/// Inference form: `y = residual + x + bias`, no dropout and no random numbers (no seed);
/// shapes and dtype as [`bias_dropout_add_device_seed`]. Still one fused kernel (and one
/// autodiff node).
pub fn bias_dropout_add_inference<B: BiasDropoutAddKernel, const D: usize>(
    x: Tensor<B, D>,
    bias: Option<Tensor<B, 1>>,
    residual: Tensor<B, D>,
) -> Tensor<B, D> {
    fused(x, bias, residual, 0.0, None)
}
