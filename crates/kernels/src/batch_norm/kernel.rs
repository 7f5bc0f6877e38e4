//! CubeCL kernels of the fused batch norm (training mode).
//!
//! Every kernel reads its `[N, C, S]` tensors through their strides (`S` is the product of the
//! spatial sizes) and is generic over the storage float `F` (f32, f16, bf16, ...), while every
//! sum is accumulated in f32. Per-channel statistics and sums are f32 `[C]`.
//!
//! The per-channel reductions run one cube per run of `chunk` elements of one channel
//! (`splits` runs per channel), so that the few channels of a large activation still fill the
//! device; a second, one-unit-per-channel kernel adds the runs in order and finishes.

use burn::cubecl;
use cubecl::prelude::*;

use crate::cube_tree::cube_sum_pair;

/// Offset of element `r` (row-major over `N` and `S`) of channel `c` in a `[N, C, S]` tensor.
#[cube]
fn channel_offset<F: Float>(t: &Tensor<F>, c: usize, r: usize, spatial: usize) -> usize {
    (r / spatial) * t.stride(0) + c * t.stride(1) + (r % spatial) * t.stride(2)
}

/// Partial sums of one run of one channel, `partials[2 · run]` and `partials[2 · run + 1]`
/// with `run = c · splits + s`:
///
/// - forward (`backward = false`): `Σ (x − x₀)` and `Σ (x − x₀)²`, with `x₀` the channel's
///   first element (a shift that keeps `E[v²] − E[v]²` free of cancellation when
///   `|mean| ≫ std`); `grad_out` and `mean` are not read;
/// - backward: `Σ dy` and `Σ dy · (x − mean)`, with `dy = 0` where the forward's output `y`
///   is not positive when `relu` (the gradient through a fused ReLU, as Burn's `relu`
///   backward masks it).
///
/// Cubes past the last run exit at once, before any barrier.
#[cube(launch)]
pub(crate) fn channel_sums_kernel<F: Float>(
    x: &Tensor<F>,
    grad_out: &Tensor<F>,
    y: &Tensor<F>,
    mean: &Tensor<f32>,
    partials: &mut Tensor<f32>,
    chunk: usize,
    splits: usize,
    #[comptime] backward: bool,
    #[comptime] relu: bool,
    #[comptime] block_size: u32,
    #[define(F)] _dtype: StorageType,
) {
    let run = CUBE_POS;
    if run * 2 >= partials.len() {
        terminate!();
    }
    let c = run / splits;
    let spatial = x.shape(2);
    let count = x.shape(0) * spatial;
    let first = (run % splits) * chunk;
    let mut end = first + chunk;
    if end > count {
        end = count;
    }
    let center = if backward {
        mean[c]
    } else {
        f32::cast_from(x[c * x.stride(1)])
    };

    let unit = UNIT_POS_X as usize;
    let mut a = f32::new(0.0);
    let mut b = f32::new(0.0);
    let mut r = first + unit;
    while r < end {
        let v = f32::cast_from(x[channel_offset::<F>(x, c, r, spatial)]) - center;
        if backward {
            let mut d = f32::cast_from(grad_out[channel_offset::<F>(grad_out, c, r, spatial)]);
            if relu {
                if f32::cast_from(y[channel_offset::<F>(y, c, r, spatial)]) <= f32::new(0.0) {
                    d = f32::new(0.0);
                }
            }
            a += d;
            b += d * v;
        } else {
            a += v;
            b += v * v;
        }
        r += CUBE_DIM_X as usize;
    }

    let mut sum_a = SharedMemory::<f32>::new(block_size as usize);
    let mut sum_b = SharedMemory::<f32>::new(block_size as usize);
    sum_a[unit] = a;
    sum_b[unit] = b;
    cube_sum_pair(&mut sum_a, &mut sum_b);
    if unit == 0 {
        partials[2 * run] = sum_a[0];
        partials[2 * run + 1] = sum_b[0];
    }
}

/// The forward's statistics, one unit per channel, from the runs' partial sums (added in
/// order): `mean = x₀ + Σv / n` and `rstd = 1 / sqrt(Σv² / n − (Σv / n)² + eps)`, the biased
/// variance (divide by `n`), as `torch.nn.BatchNorm2d` and `burn::nn::BatchNorm` normalise.
#[cube(launch)]
pub(crate) fn channel_stats_kernel<F: Float>(
    x: &Tensor<F>,
    partials: &Tensor<f32>,
    mean: &mut Tensor<f32>,
    rstd: &mut Tensor<f32>,
    splits: usize,
    eps: f32,
    #[define(F)] _dtype: StorageType,
) {
    let c = ABSOLUTE_POS;
    if c >= mean.len() {
        terminate!();
    }
    let n = f32::cast_from(x.shape(0) * x.shape(2));
    let mut s1 = f32::new(0.0);
    let mut s2 = f32::new(0.0);
    for s in 0..splits {
        s1 += partials[2 * (c * splits + s)];
        s2 += partials[2 * (c * splits + s) + 1];
    }
    let shifted_mean = s1 / n;
    let var = f32::max(s2 / n - shifted_mean * shifted_mean, f32::new(0.0));
    mean[c] = f32::cast_from(x[c * x.stride(1)]) + shifted_mean;
    rstd[c] = f32::new(1.0) / (var + eps).sqrt();
}

/// The backward's per-channel results, one unit per channel, from the runs' partial sums:
/// `dbeta = Σ dy`, `dgamma = rstd · Σ dy · (x − mean)` (in `F`), and the same two sums in f32
/// for the input gradient (`sums[2c]`, `sums[2c + 1]`).
#[cube(launch)]
pub(crate) fn channel_grads_kernel<F: Float>(
    partials: &Tensor<f32>,
    rstd: &Tensor<f32>,
    dgamma: &mut Tensor<F>,
    dbeta: &mut Tensor<F>,
    sums: &mut Tensor<f32>,
    splits: usize,
    #[define(F)] _dtype: StorageType,
) {
    let c = ABSOLUTE_POS;
    if c >= rstd.len() {
        terminate!();
    }
    let mut s1 = f32::new(0.0);
    let mut s2 = f32::new(0.0);
    for s in 0..splits {
        s1 += partials[2 * (c * splits + s)];
        s2 += partials[2 * (c * splits + s) + 1];
    }
    dbeta[c] = F::cast_from(s1);
    dgamma[c] = F::cast_from(s2 * rstd[c]);
    sums[2 * c] = s1;
    sums[2 * c + 1] = s2;
}

/// Channel of element `position` of a contiguous `[N, C, S]` tensor, and the element's offset
/// in `t` (same shape, any strides).
#[cube]
fn channel_and_offset<F: Float>(t: &Tensor<F>, position: usize) -> (usize, usize) {
    let spatial = t.shape(2);
    let channels = t.shape(1);
    let s = position % spatial;
    let c = (position / spatial) % channels;
    let n = position / (spatial * channels);
    (c, n * t.stride(0) + c * t.stride(1) + s * t.stride(2))
}

/// Forward normalisation, one unit per element: `y = (x − mean) · rstd · gamma + beta`, then
/// `max(y, 0)` when `relu`. `y` is contiguous `[N, C, S]`; `gamma`, `beta` `[C]` in `F`.
#[cube(launch)]
pub(crate) fn normalize_kernel<F: Float>(
    x: &Tensor<F>,
    mean: &Tensor<f32>,
    rstd: &Tensor<f32>,
    gamma: &Tensor<F>,
    beta: &Tensor<F>,
    y: &mut Tensor<F>,
    #[comptime] relu: bool,
    #[define(F)] _dtype: StorageType,
) {
    let position = ABSOLUTE_POS;
    if position >= y.len() {
        terminate!();
    }
    let (c, offset) = channel_and_offset::<F>(x, position);
    let xhat = (f32::cast_from(x[offset]) - mean[c]) * rstd[c];
    let mut out = xhat * f32::cast_from(gamma[c * gamma.stride(0)])
        + f32::cast_from(beta[c * beta.stride(0)]);
    if relu {
        out = f32::max(out, f32::new(0.0));
    }
    y[position] = F::cast_from(out);
}

/// Backward input gradient, one unit per element:
/// `dx = gamma · rstd · (dy − Σdy / n − (x − mean) · rstd² · Σdy·(x − mean) / n)`, with the two
/// sums from [`channel_grads_kernel`], and `dy = 0` where `y ≤ 0` when `relu` (as
/// [`channel_sums_kernel`]). `dx` is contiguous `[N, C, S]`.
#[cube(launch)]
pub(crate) fn input_grad_kernel<F: Float>(
    x: &Tensor<F>,
    grad_out: &Tensor<F>,
    y: &Tensor<F>,
    mean: &Tensor<f32>,
    rstd: &Tensor<f32>,
    gamma: &Tensor<F>,
    sums: &Tensor<f32>,
    dx: &mut Tensor<F>,
    #[comptime] relu: bool,
    #[define(F)] _dtype: StorageType,
) {
    let position = ABSOLUTE_POS;
    if position >= dx.len() {
        terminate!();
    }
    let (c, x_offset) = channel_and_offset::<F>(x, position);
    let (_, g_offset) = channel_and_offset::<F>(grad_out, position);
    let n = f32::cast_from(x.shape(0) * x.shape(2));
    let r = rstd[c];
    let centered = f32::cast_from(x[x_offset]) - mean[c];
    let mut dy = f32::cast_from(grad_out[g_offset]);
    if relu {
        let (_, y_offset) = channel_and_offset::<F>(y, position);
        if f32::cast_from(y[y_offset]) <= f32::new(0.0) {
            dy = f32::new(0.0);
        }
    }
    let scale = f32::cast_from(gamma[c * gamma.stride(0)]) * r;
    let out = scale * (dy - sums[2 * c] / n - centered * r * r * sums[2 * c + 1] / n);
    dx[position] = F::cast_from(out);
}
