//! Reference LayerNorm with plain Burn tensor ops, for any backend: the ground truth of the
//! tests and the fallback of backends without the fused kernels.
//!
//! Everything is computed in the dtype of the inputs (run it on `NdArray<f64>` for an f64
//! reference); the fused kernels instead accumulate in f32 whatever the storage dtype.

use burn::tensor::Tensor;
use burn::tensor::backend::Backend;

/// `[..., width]` → `(rows, width)`, `rows` being the product of the leading dimensions.
fn rows_and_width<B: Backend, const D: usize>(x: &Tensor<B, D>) -> (usize, usize) {
    let dims = x.dims();
    let width = dims[D - 1];
    (dims[..D - 1].iter().product(), width)
}

/// Sum of `t: [..., width]` over every leading dimension → `[width]`.
fn sum_rows<B: Backend, const D: usize>(t: Tensor<B, D>) -> Tensor<B, 1> {
    let (rows, width) = rows_and_width(&t);
    t.reshape([rows, width]).sum_dim(0).reshape([width])
}

/// Per-row statistics of `x: [..., width]`: `(mean, rstd)`, each `[..., 1]`, with
/// `rstd = 1 / sqrt(var + eps)` and the biased variance (divide by `width`).
pub fn layer_norm_stats_reference<B: Backend, const D: usize>(
    x: Tensor<B, D>,
    eps: f64,
) -> (Tensor<B, D>, Tensor<B, D>) {
    let mean = x.clone().mean_dim(D - 1);
    let var = (x - mean.clone()).square().mean_dim(D - 1);
    (mean, var.add_scalar(eps).sqrt().recip())
}

/// Reference forward: `y = (x − mean) / sqrt(var + eps) · gamma + beta` over the last dimension.
///
/// `x: [..., width]` → same shape; `gamma`, `beta`: `[width]` (precondition). Same result as
/// `burn::nn::LayerNorm` and `torch.nn.LayerNorm` (biased variance).
pub fn layer_norm_reference<B: Backend, const D: usize>(
    x: Tensor<B, D>,
    gamma: Tensor<B, 1>,
    beta: Tensor<B, 1>,
    eps: f64,
) -> Tensor<B, D> {
    let (mean, rstd) = layer_norm_stats_reference(x.clone(), eps);
    (x - mean) * rstd * gamma.unsqueeze::<D>() + beta.unsqueeze::<D>()
}

/// Reference backward from the forward's statistics (`mean`, `rstd`: `[..., 1]`, as from
/// [`layer_norm_stats_reference`]), with the analytic formulas, `x̂ = (x − mean) · rstd`:
///
/// - `dx = rstd · (g·γ − mean(g·γ) − x̂ · mean(g·γ·x̂))`, means over the last dimension;
/// - `dgamma = Σ_rows g · x̂`, `dbeta = Σ_rows g`.
///
/// `x`, `grad_out`: `[..., width]`; `gamma`: `[width]`. Returns `(dx, dgamma, dbeta)`, shaped
/// like `x`, `gamma`, `gamma`.
pub fn layer_norm_backward_from_stats_reference<B: Backend, const D: usize>(
    x: Tensor<B, D>,
    gamma: Tensor<B, 1>,
    grad_out: Tensor<B, D>,
    mean: Tensor<B, D>,
    rstd: Tensor<B, D>,
) -> (Tensor<B, D>, Tensor<B, 1>, Tensor<B, 1>) {
    let xhat = (x - mean) * rstd.clone();
    let gg = grad_out.clone() * gamma.unsqueeze::<D>();
    let mean_gg = gg.clone().mean_dim(D - 1);
    let mean_ggx = (gg.clone() * xhat.clone()).mean_dim(D - 1);
    let dx = (gg - mean_gg - xhat.clone() * mean_ggx) * rstd;
    let dgamma = sum_rows(grad_out.clone() * xhat);
    let dbeta = sum_rows(grad_out);
    (dx, dgamma, dbeta)
}

/// Reference backward of [`layer_norm_reference`] with respect to `x`, `gamma` and `beta`,
/// given the upstream gradient `grad_out` (shaped like `x`). Returns `(dx, dgamma, dbeta)`,
/// shaped like `x`, `gamma`, `gamma`; see [`layer_norm_backward_from_stats_reference`].
pub fn layer_norm_backward_reference<B: Backend, const D: usize>(
    x: Tensor<B, D>,
    gamma: Tensor<B, 1>,
    grad_out: Tensor<B, D>,
    eps: f64,
) -> (Tensor<B, D>, Tensor<B, 1>, Tensor<B, 1>) {
    let (mean, rstd) = layer_norm_stats_reference(x.clone(), eps);
    layer_norm_backward_from_stats_reference(x, gamma, grad_out, mean, rstd)
}
