//! Reference bias + dropout + residual add with plain Burn tensor ops, for any backend: the
//! ground truth of the tests and the fallback of backends without the fused kernels.
//!
//! The keep-mask comes from the host ([`dropout_keep_mask_tensor`]), bit-identical to the one
//! the kernels regenerate on the device, so the reference and the fused path drop the same
//! elements. The seed is a host value (a [`DropoutSeed`] or a `u64`); a device seed tensor is
//! read back first ([`DropoutSeed::from_tensor`], a synchronisation: this path is for tests
//! and the CPU backends). Everything is computed in the dtype of the inputs (run it on `NdArray<f64>` for
//! an f64 reference); the fused kernels instead accumulate in f32 whatever the storage dtype.

use burn::tensor::Tensor;
use burn::tensor::backend::Backend;

use super::mask::{check_probability, dropout_keep_mask_tensor, dropout_scale};
use super::seed::DropoutSeed;

/// `dropout(v, p)` with the seeded mask: kept elements scaled by `1 / (1 − p)`, dropped
/// elements exactly 0. `v: [..., width]` → same shape and dtype.
///
/// Dropped elements are replaced (`mask_fill`), not multiplied by zero, as in the kernels: a
/// non-finite dropped value yields 0, not NaN.
pub fn dropout_reference<B: Backend, const D: usize>(
    v: Tensor<B, D>,
    p: f64,
    seed: impl Into<DropoutSeed>,
) -> Tensor<B, D> {
    check_probability(p);
    if p == 0.0 {
        // The inference form: no mask at all, as in the kernels.
        return v;
    }
    let keep = dropout_keep_mask_tensor::<B, D>(seed, p, v.dims(), &v.device());
    v.mul_scalar(dropout_scale(p))
        .mask_fill(keep.bool_not(), 0.0)
}

/// Reference forward: `y = residual + dropout(x + bias, p)`.
///
/// `x`, `residual`: `[..., width]`, same shape; `bias`: `[width]` or `None` (no bias);
/// `0 ≤ p < 1`; `seed` selects the mask. Returns `y` shaped like `x`.
pub fn bias_dropout_add_reference<B: Backend, const D: usize>(
    x: Tensor<B, D>,
    bias: Option<Tensor<B, 1>>,
    residual: Tensor<B, D>,
    p: f64,
    seed: impl Into<DropoutSeed>,
) -> Tensor<B, D> {
    let v = match bias {
        Some(bias) => x + bias.unsqueeze::<D>(),
        None => x,
    };
    residual + dropout_reference(v, p, seed)
}

/// Reference backward of [`bias_dropout_add_reference`] from the upstream gradient
/// `grad_out: [..., width]`:
///
/// - `dx = grad_out · mask / (1 − p)` (shaped like `grad_out`);
/// - `dbias = Σ_rows dx` (`[width]`), returned only when `with_bias`;
/// - `d_residual = grad_out` itself, hence not returned.
pub fn bias_dropout_add_backward_reference<B: Backend, const D: usize>(
    grad_out: Tensor<B, D>,
    p: f64,
    seed: impl Into<DropoutSeed>,
    with_bias: bool,
) -> (Tensor<B, D>, Option<Tensor<B, 1>>) {
    let dx = dropout_reference(grad_out, p, seed);
    let dbias = with_bias.then(|| {
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
