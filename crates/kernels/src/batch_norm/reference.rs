//! Reference batch norm (training mode) with plain Burn tensor ops, for any backend: the
//! ground truth of the tests beside `burn::nn::BatchNorm` itself.
//!
//! Everything is computed in the dtype of the inputs (run it on `NdArray<f64>` for an f64
//! reference); the fused kernels instead accumulate in f32 whatever the storage dtype.

use burn::tensor::Tensor;
use burn::tensor::backend::Backend;

/// `x: [N, C, ...]` as `[N, C, S]`, `S` the product of the trailing sizes.
fn as_channels<B: Backend, const D: usize>(x: Tensor<B, D>) -> Tensor<B, 3> {
    let dims = x.dims();
    x.reshape([dims[0], dims[1], dims[2..].iter().product()])
}

/// Per-channel sum of `t: [N, C, S]` → `[1, C, 1]`.
fn channel_sum<B: Backend>(t: Tensor<B, 3>) -> Tensor<B, 3> {
    t.sum_dim(0).sum_dim(2)
}

/// `[C]` → `[1, C, 1]`, to broadcast over `[N, C, S]`.
fn per_channel<B: Backend>(v: Tensor<B, 1>) -> Tensor<B, 3> {
    let channels = v.dims()[0];
    v.reshape([1, channels, 1])
}

/// Reference forward in training mode: `(y, mean, rstd)` with `y` shaped like `x: [N, C, ...]`
/// and `mean`, `rstd = 1 / sqrt(var + eps)` `[C]`, the statistics taken over every axis but
/// 1 and the variance biased (divide by `N · Π spatial`), as `burn::nn::BatchNorm` normalises.
/// `max(y, 0)` when `relu`. `gamma`, `beta`: `[C]`.
pub fn batch_norm_reference<B: Backend, const D: usize>(
    x: Tensor<B, D>,
    gamma: Tensor<B, 1>,
    beta: Tensor<B, 1>,
    eps: f64,
    relu: bool,
) -> (Tensor<B, D>, Tensor<B, 1>, Tensor<B, 1>) {
    let shape = x.shape();
    let x = as_channels(x);
    let [n, channels, spatial] = x.dims();
    let count = (n * spatial) as f64;
    let mean = channel_sum(x.clone()).div_scalar(count);
    let var = channel_sum((x.clone() - mean.clone()).square()).div_scalar(count);
    let rstd = var.add_scalar(eps).sqrt().recip();
    let mut y = (x - mean.clone()) * rstd.clone() * per_channel(gamma) + per_channel(beta);
    if relu {
        y = burn::tensor::activation::relu(y);
    }
    (
        y.reshape(shape),
        mean.reshape([channels]),
        rstd.reshape([channels]),
    )
}

/// Reference backward from the forward's statistics, with the analytic formulas,
/// `x̂ = (x − mean) · rstd`, `n = N · Π spatial`:
///
/// ```text
/// dbeta = Σ dy,   dgamma = Σ dy · x̂,   dx = gamma · rstd · (dy − dbeta / n − x̂ · dgamma / n)
/// ```
///
/// with `dy` zeroed where the forward's output is not positive when `relu_output` is given.
/// Returns `(dx, dgamma, dbeta)` shaped like `x`, `[C]`, `[C]`.
pub fn batch_norm_backward_reference<B: Backend, const D: usize>(
    x: Tensor<B, D>,
    gamma: Tensor<B, 1>,
    grad_out: Tensor<B, D>,
    mean: Tensor<B, 1>,
    rstd: Tensor<B, 1>,
    relu_output: Option<Tensor<B, D>>,
) -> (Tensor<B, D>, Tensor<B, 1>, Tensor<B, 1>) {
    let shape = x.shape();
    let x = as_channels(x);
    let [n, channels, spatial] = x.dims();
    let count = (n * spatial) as f64;
    let mut dy = as_channels(grad_out);
    if let Some(y) = relu_output {
        dy = dy.mask_fill(as_channels(y).lower_equal_elem(0.0), 0.0);
    }
    let rstd = per_channel(rstd);
    let xhat = (x - per_channel(mean)) * rstd.clone();
    let dbeta = channel_sum(dy.clone());
    let dgamma = channel_sum(dy.clone() * xhat.clone());
    let dx = per_channel(gamma)
        * rstd
        * (dy - dbeta.clone().div_scalar(count) - xhat * dgamma.clone().div_scalar(count));
    (
        dx.reshape(shape),
        dgamma.reshape([channels]),
        dbeta.reshape([channels]),
    )
}
