//! Batch norm in training mode over contiguous f32 `[N, C, S]` (`S` the product of the spatial
//! sizes), with an optional ReLU after it, forward and backward, each two multi-threaded passes:
//! per-channel sums (channels spread over the cores), then one element-wise pass over the rows
//! (Burn's decomposed batch norm makes about five passes forward and eighteen backward, each
//! with its own intermediate).
//!
//! ```text
//! forward:  y = x̂ · γ + β  (then max(y, 0)),   x̂ = (x − μ) · rstd,   rstd = 1 / sqrt(σ² + eps)
//! backward: dy' = dy where y > 0 (with the ReLU), else dy
//!           dβ = Σ dy',  dγ = rstd · Σ dy' · (x − μ)
//!           dx = γ · rstd · (dy' − dβ / n − (x − μ) · rstd² · Σ dy' · (x − μ) / n)
//! ```
//!
//! `μ` and the biased `σ²` are taken per channel over `n = N · S` elements in f32, the variance
//! from the deviations (a second pass over the channel while it is in cache), as
//! `burn::nn::BatchNorm` computes them.

use super::rows::{TASK_ELEMENTS, for_each_row_chunk, rows_per_task, sum_by};
use rayon::prelude::*;

/// The layout of a contiguous `[N, C, S]` tensor: channel `c` is the `N` rows `n · C + c`
/// of `S` elements.
#[derive(Clone, Copy, Debug)]
pub struct ChannelLayout {
    /// `N`.
    pub batch: usize,
    /// `C`.
    pub channels: usize,
    /// `S`, the product of the spatial sizes (1 for a rank-2 input).
    pub spatial: usize,
}

impl ChannelLayout {
    /// Elements per channel, `N · S`.
    fn count(&self) -> usize {
        self.batch * self.spatial
    }

    /// `Σ term(row of c)` over the `N` rows of channel `c`, each row given as its offset.
    fn sum_rows(&self, c: usize, term: impl Fn(usize) -> f32) -> f32 {
        (0..self.batch)
            .map(|n| term((n * self.channels + c) * self.spatial))
            .sum()
    }

    /// `f(c)` for every channel, in parallel over chunks of channels that each cover about
    /// [`TASK_ELEMENTS`] elements; results in channel order.
    fn per_channel<T: Send>(&self, f: impl Fn(usize) -> T + Sync + Send) -> Vec<T> {
        let per_task = TASK_ELEMENTS.div_ceil(self.count().max(1)).max(1);
        (0..self.channels)
            .into_par_iter()
            .with_min_len(per_task)
            .map(f)
            .collect()
    }
}

/// `(y, mean, rstd)`: `x` contiguous `[N, C, S]`, `gamma`, `beta` `[C]`; `y` like `x`, `mean`
/// and `rstd` `[C]`. With no element per channel, `mean` and `rstd` are NaN (`0 / 0`), as the
/// plain-Burn formula gives.
pub fn batch_norm_forward(
    x: &[f32],
    gamma: &[f32],
    beta: &[f32],
    layout: ChannelLayout,
    eps: f32,
    relu: bool,
) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let (s, n) = (layout.spatial, layout.count() as f32);
    let stats = layout.per_channel(|c| {
        let mean = layout.sum_rows(c, |row| sum_by(s, |j| x[row + j])) / n;
        let var = layout.sum_rows(c, |row| {
            sum_by(s, |j| (x[row + j] - mean) * (x[row + j] - mean))
        }) / n;
        (mean, 1.0 / (var + eps).sqrt())
    });
    let (mean, rstd): (Vec<f32>, Vec<f32>) = stats.into_iter().unzip();

    let mut y = vec![0f32; x.len()];
    for_each_row_chunk(&mut y, s, rows_per_task(s), |first_row, rows| {
        for (i, y) in rows.chunks_mut(s).enumerate() {
            let row = first_row + i;
            let c = row % layout.channels;
            let scale = rstd[c] * gamma[c];
            let shift = beta[c] - mean[c] * scale;
            let x = &x[row * s..(row + 1) * s];
            for (y, &x) in y.iter_mut().zip(x) {
                let v = x * scale + shift;
                *y = if relu { v.max(0.0) } else { v };
            }
        }
    });
    (y, mean, rstd)
}

/// `(dx, dgamma, dbeta)` from `x` (contiguous `[N, C, S]`), `gamma` `[C]`, the upstream
/// gradient `grad` (like `x`), the forward's `mean` and `rstd` `[C]` and, with a fused ReLU,
/// the forward's output `relu_output` (like `x`; the gradient is zero where it is not
/// positive). `dgamma` and `dbeta` are zero for channels with no element.
pub fn batch_norm_backward(
    x: &[f32],
    gamma: &[f32],
    grad: &[f32],
    mean: &[f32],
    rstd: &[f32],
    relu_output: Option<&[f32]>,
    layout: ChannelLayout,
) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let s = layout.spatial;
    let n = layout.count() as f32;
    // dy', the gradient through the ReLU.
    let dy = |i: usize| match relu_output {
        Some(y) if y[i] <= 0.0 => 0.0,
        _ => grad[i],
    };
    // Per channel: Σ dy' and Σ dy' · (x − μ).
    let sums = layout.per_channel(|c| {
        let mu = mean[c];
        let sum_dy = layout.sum_rows(c, |row| sum_by(s, |j| dy(row + j)));
        let sum_dy_xc = layout.sum_rows(c, |row| sum_by(s, |j| dy(row + j) * (x[row + j] - mu)));
        (sum_dy, sum_dy_xc)
    });
    let dbeta: Vec<f32> = sums.iter().map(|&(sum_dy, _)| sum_dy).collect();
    let dgamma: Vec<f32> = sums
        .iter()
        .zip(rstd)
        // Σ over nothing is 0, whatever rstd (NaN without elements).
        .map(|(&(_, sum_dy_xc), &r)| if n > 0.0 { sum_dy_xc * r } else { 0.0 })
        .collect();

    let mut dx = vec![0f32; x.len()];
    for_each_row_chunk(&mut dx, s, rows_per_task(s), |first_row, rows| {
        for (i, dx) in rows.chunks_mut(s).enumerate() {
            let row = first_row + i;
            let c = row % layout.channels;
            let (r, mu) = (rstd[c], mean[c]);
            let (sum_dy, sum_dy_xc) = sums[c];
            let scale = gamma[c] * r;
            let mean_dy = sum_dy / n;
            let slope = r * r * sum_dy_xc / n;
            let offset = row * s;
            for (j, dx) in dx.iter_mut().enumerate() {
                let k = offset + j;
                *dx = scale * (dy(k) - mean_dy - (x[k] - mu) * slope);
            }
        }
    });
    (dx, dgamma, dbeta)
}
