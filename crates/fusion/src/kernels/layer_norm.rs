//! LayerNorm over the last dimension of contiguous f32 rows, forward and backward, each one
//! multi-threaded pass over the rows (Burn's decomposed LayerNorm makes about ten passes each
//! way, and its autodiff graph keeps the intermediates).
//!
//! ```text
//! forward:  y = x̂ · γ + β,      x̂ = (x − μ) · rstd,   rstd = 1 / sqrt(σ² + eps)
//! backward: dx = rstd · (g − mean(g) − x̂ · mean(g · x̂)),  g = dy · γ
//!           dγ = Σ_rows dy · x̂,  dβ = Σ_rows dy
//! ```
//!
//! `μ` and the biased `σ²` are taken per row in f32, the variance from the deviations (two
//! passes over the row while it is in cache), as burnacc's CubeCL kernel does.

use super::rows::{add_partials, for_each_row_chunk, rows_per_task, sum_by};

/// `(y, mean, rstd)`: `x` is `rows × width` row-major, `gamma`, `beta` `[width]`; `y` like
/// `x`, `mean` and `rstd` `[rows]`.
pub fn layer_norm_forward(
    x: &[f32],
    gamma: &[f32],
    beta: &[f32],
    width: usize,
    eps: f32,
) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let mut y = vec![0f32; x.len()];
    let per_task = rows_per_task(width);
    let stats = for_each_row_chunk(&mut y, width, per_task, |first_row, y_rows| {
        let mut stats = Vec::with_capacity(y_rows.len() / width);
        for (i, y) in y_rows.chunks_mut(width).enumerate() {
            let row = first_row + i;
            let x = &x[row * width..(row + 1) * width];
            let mu = sum_by(width, |j| x[j]) / width as f32;
            let var = sum_by(width, |j| (x[j] - mu) * (x[j] - mu)) / width as f32;
            let r = 1.0 / (var + eps).sqrt();
            for (((y, &x), &g), &b) in y.iter_mut().zip(x).zip(gamma).zip(beta) {
                *y = (x - mu) * r * g + b;
            }
            stats.push((mu, r));
        }
        stats
    });
    let (mean, rstd) = stats.into_iter().flatten().unzip();
    (y, mean, rstd)
}

/// `(dx, dgamma, dbeta)` from `x`, `gamma`, the upstream gradient `grad` (like `x`) and the
/// forward's per-row `mean`, `rstd`. `dgamma` and `dbeta` are summed per task, then the task
/// partials are added in task order (deterministic for a given shape).
pub fn layer_norm_backward(
    x: &[f32],
    gamma: &[f32],
    grad: &[f32],
    mean: &[f32],
    rstd: &[f32],
    width: usize,
) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let mut dx = vec![0f32; x.len()];
    let partials = for_each_row_chunk(
        &mut dx,
        width,
        rows_per_task(width),
        |first_row, dx_rows| {
            let mut dgamma = vec![0f32; width];
            let mut dbeta = vec![0f32; width];
            for (i, dx) in dx_rows.chunks_mut(width).enumerate() {
                let row = first_row + i;
                let x = &x[row * width..(row + 1) * width];
                let dy = &grad[row * width..(row + 1) * width];
                let (mu, r) = (mean[row], rstd[row]);
                let xhat = |j: usize| (x[j] - mu) * r;
                let mean_g = sum_by(width, |j| dy[j] * gamma[j]) / width as f32;
                let mean_gx = sum_by(width, |j| dy[j] * gamma[j] * xhat(j)) / width as f32;
                for (j, dx) in dx.iter_mut().enumerate() {
                    let h = xhat(j);
                    *dx = r * (dy[j] * gamma[j] - mean_g - h * mean_gx);
                    dgamma[j] += dy[j] * h;
                    dbeta[j] += dy[j];
                }
            }
            (dgamma, dbeta)
        },
    );
    let (pg, pb): (Vec<_>, Vec<_>) = partials.into_iter().unzip();
    (dx, add_partials(pg, width), add_partials(pb, width))
}
