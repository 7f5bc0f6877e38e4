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
    0.5 * (1.0 + libm::erff(v * FRAC_1_SQRT_2))
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
