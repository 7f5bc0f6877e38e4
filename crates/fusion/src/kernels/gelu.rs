//! Exact (erf) GELU with an optional bias, and QuickGELU, on contiguous f32 rows: forward and
//! backward, each one multi-threaded pass (the backward of bias + GELU also sums the bias
//! gradient in that pass).
//!
//! ```text
//! gelu:       y = v · Φ(v),   v = x + bias,   Φ(v) = (1 + erf(v / √2)) / 2
//!             dx = dy · (Φ(v) + v · φ(v)),    φ(v) = exp(−v² / 2) / √(2π),   dbias = Σ_rows dx
//! quick_gelu: y = x · s,      s = sigmoid(1.702 x)
//!             dx = dy · (s + 1.702 x · s · (1 − s))
//! ```

use super::rows::{TASK_ELEMENTS, add_partials, for_each_row_chunk, rows_per_task};
use rayon::prelude::*;
use std::f32::consts::{FRAC_1_SQRT_2, PI};

const QUICK_GELU_SLOPE: f32 = 1.702;

#[inline(always)]
fn cdf(v: f32) -> f32 {
    0.5 * (1.0 + erf(v * FRAC_1_SQRT_2))
}

/// `erf(x)` for f32 `x` as a rational function of `x` on `[−4, 4]` (±1 outside, where f32's
/// erf is ±1 within rounding): the minimax approximation Eigen and XLA use for f32 (odd
/// numerator of degree 13, even denominator of degree 8), evaluated in f64 so that its
/// roundings do not add up (in f32 they reach 8 ulp near ±1, which `1 + erf` exposes in GELU's
/// negative tail). Within about 1 ulp of the correctly rounded erf (the tests hold it to
/// `libm::erff`). Unlike `libm::erff` it has no branches or table lookups, so the loops that
/// call it vectorise.
#[inline(always)]
pub fn erf(x: f32) -> f32 {
    let x = f64::from(x.clamp(-4.0, 4.0));
    let x2 = x * x;
    // Plain multiply-adds: `mul_add` is a library call where the target has no FMA.
    let mut p = -2.726_142_258_013_06e-10;
    for c in [
        2.770_681_424_959_02e-8,
        -2.101_024_020_825_08e-6,
        -5.692_506_394_623_46e-5,
        -7.349_906_303_268_55e-4,
        -2.954_599_808_540_25e-3,
        -1.609_603_332_624_15e-2,
    ] {
        p = p * x2 + c;
    }
    let mut q = -1.456_607_184_649_96e-5;
    for c in [
        -2.133_740_552_789_05e-4,
        -1.682_826_974_382_03e-3,
        -7.373_329_167_204_68e-3,
        -1.426_473_905_141_89e-2,
    ] {
        q = q * x2 + c;
    }
    (x * p / q) as f32
}

#[inline(always)]
fn gelu_grad(v: f32) -> f32 {
    let pdf = (-0.5 * v * v).exp() / (2.0 * PI).sqrt();
    cdf(v) + v * pdf
}

#[inline(always)]
fn sigmoid(v: f32) -> f32 {
    1.0 / (1.0 + (-v).exp())
}

/// `gelu(x + bias)`: `x` is `rows × width` (`bias: [width]`), or any length without a bias.
pub fn bias_gelu_forward(x: &[f32], bias: Option<&[f32]>) -> Vec<f32> {
    let mut y = vec![0f32; x.len()];
    match bias {
        Some(bias) => {
            let width = bias.len();
            for_each_row_chunk(&mut y, width, rows_per_task(width), |first_row, y| {
                let x = &x[first_row * width..first_row * width + y.len()];
                for (y, x) in y.chunks_mut(width).zip(x.chunks(width)) {
                    for ((y, &x), &b) in y.iter_mut().zip(x).zip(bias) {
                        let v = x + b;
                        *y = v * cdf(v);
                    }
                }
            });
        }
        None => map(x, &mut y, |v| v * cdf(v)),
    }
    y
}

/// `(dx, dbias)` of [`bias_gelu_forward`] from `x`, `bias` and the upstream gradient `grad`
/// (like `x`); `dbias` (`[width]`) iff `bias`, summed per task then in task order.
pub fn bias_gelu_backward(
    x: &[f32],
    bias: Option<&[f32]>,
    grad: &[f32],
) -> (Vec<f32>, Option<Vec<f32>>) {
    let mut dx = vec![0f32; x.len()];
    let Some(bias) = bias else {
        zip_map(x, grad, &mut dx, |v, g| g * gelu_grad(v));
        return (dx, None);
    };
    let width = bias.len();
    let partials = for_each_row_chunk(&mut dx, width, rows_per_task(width), |first_row, dx| {
        let start = first_row * width;
        let (x, grad) = (&x[start..start + dx.len()], &grad[start..start + dx.len()]);
        let mut dbias = vec![0f32; width];
        for ((dx, x), g) in dx
            .chunks_mut(width)
            .zip(x.chunks(width))
            .zip(grad.chunks(width))
        {
            for (j, dx) in dx.iter_mut().enumerate() {
                let d = g[j] * gelu_grad(x[j] + bias[j]);
                *dx = d;
                dbias[j] += d;
            }
        }
        dbias
    });
    (dx, Some(add_partials(partials, width)))
}

/// QuickGELU of `x`, any length.
pub fn quick_gelu_forward(x: &[f32]) -> Vec<f32> {
    let mut y = vec![0f32; x.len()];
    map(x, &mut y, |v| v * sigmoid(QUICK_GELU_SLOPE * v));
    y
}

/// The gradient of QuickGELU with respect to `x` from the upstream gradient `grad`.
pub fn quick_gelu_backward(x: &[f32], grad: &[f32]) -> Vec<f32> {
    let mut dx = vec![0f32; x.len()];
    zip_map(x, grad, &mut dx, |v, g| {
        let s = sigmoid(QUICK_GELU_SLOPE * v);
        g * (s + QUICK_GELU_SLOPE * v * s * (1.0 - s))
    });
    dx
}

/// `out[i] = f(x[i])`, in parallel chunks.
fn map(x: &[f32], out: &mut [f32], f: impl Fn(f32) -> f32 + Sync) {
    out.par_chunks_mut(TASK_ELEMENTS)
        .zip(x.par_chunks(TASK_ELEMENTS))
        .for_each(|(out, x)| out.iter_mut().zip(x).for_each(|(o, &v)| *o = f(v)));
}

/// `out[i] = f(x[i], g[i])`, in parallel chunks.
fn zip_map(x: &[f32], g: &[f32], out: &mut [f32], f: impl Fn(f32, f32) -> f32 + Sync) {
    out.par_chunks_mut(TASK_ELEMENTS)
        .zip(x.par_chunks(TASK_ELEMENTS).zip(g.par_chunks(TASK_ELEMENTS)))
        .for_each(|(out, (x, g))| {
            out.iter_mut()
                .zip(x.iter().zip(g))
                .for_each(|(o, (&v, &g))| *o = f(v, g))
        });
}
