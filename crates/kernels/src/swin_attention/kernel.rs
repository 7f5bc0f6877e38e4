//! CubeCL kernels of the window-attention softmax: one unit per row `(window, head, q)` of
//! `n` logits, rows numbered row-major, so row `r` is window `r / (heads · n)`, head
//! `(r / n) mod heads`, query `r mod n`.
//!
//! Tensors are contiguous and read through their linear index, in storage float `F`; every
//! value is widened to f32. A row is short (`n = 49` for 7×7 windows) and there are many of
//! them (`windows · heads · n`), so a unit per row keeps the device busy without any
//! cross-unit reduction; neighbouring units read neighbouring rows, which share cache lines.

use burn::cubecl;
use cubecl::prelude::*;

/// Logit `k` of row `row`: `scores[row, k] + table[index[q · n + k], head] (+ mask[window mod
/// num_windows, q, k])`, in f32.
#[cube]
#[allow(clippy::too_many_arguments)]
fn logit<F: Float, I: Int>(
    scores: &Tensor<F>,
    table: &Tensor<F>,
    index: &Tensor<I>,
    mask: &Tensor<F>,
    row: usize,
    k: usize,
    n: usize,
    heads: usize,
    mask_base: usize,
    #[comptime] has_mask: bool,
) -> f32 {
    let q = row % n;
    let head = (row / n) % heads;
    let offset = usize::cast_from(index[q * n + k]);
    let mut s = f32::cast_from(scores[row * n + k]) + f32::cast_from(table[offset * heads + head]);
    if has_mask {
        s += f32::cast_from(mask[mask_base + k]);
    }
    s
}

/// Forward: `probs[row, :] = softmax(logits of row)`.
///
/// - `scores`, `probs`: `[windows · heads · n · n]`; `table`: `[offsets · heads]`; `index`:
///   `[n · n]`; `mask`: `[num_windows · n · n]` (a placeholder when `has_mask` is false).
///
/// The maximum and the sum of exponentials come from one online pass (the sum is rescaled
/// whenever the maximum grows), so the logits are formed twice: once there and once when the
/// probabilities are written.
#[cube(launch)]
#[allow(clippy::too_many_arguments)]
pub(crate) fn window_softmax_forward_kernel<F: Float, I: Int>(
    scores: &Tensor<F>,
    table: &Tensor<F>,
    index: &Tensor<I>,
    mask: &Tensor<F>,
    probs: &mut Tensor<F>,
    n: usize,
    heads: usize,
    num_windows: usize,
    #[comptime] has_mask: bool,
    #[define(F, I)] _dtypes: [StorageType; 2],
) {
    let row = ABSOLUTE_POS;
    if row >= probs.len() / n {
        terminate!();
    }
    let q = row % n;
    let window = row / (n * heads);
    let mask_base = ((window % num_windows) * n + q) * n;

    let mut max = logit::<F, I>(
        scores, table, index, mask, row, 0, n, heads, mask_base, has_mask,
    );
    let mut sum = f32::new(1.0);
    let mut k = 1;
    while k < n {
        let s = logit::<F, I>(
            scores, table, index, mask, row, k, n, heads, mask_base, has_mask,
        );
        if s > max {
            sum = sum * (max - s).exp() + f32::new(1.0);
            max = s;
        } else {
            sum += (s - max).exp();
        }
        k += 1;
    }
    let inv = f32::new(1.0) / sum;
    let mut k = 0;
    while k < n {
        let s = logit::<F, I>(
            scores, table, index, mask, row, k, n, heads, mask_base, has_mask,
        );
        probs[row * n + k] = F::cast_from((s - max).exp() * inv);
        k += 1;
    }
}

/// Backward: `dscores[row, k] = probs[row, k] · (dprobs[row, k] − Σ_j dprobs[row, j] ·
/// probs[row, j])`; all three `[rows · n]`.
#[cube(launch)]
pub(crate) fn window_softmax_backward_kernel<F: Float>(
    probs: &Tensor<F>,
    grad_probs: &Tensor<F>,
    dscores: &mut Tensor<F>,
    n: usize,
    #[define(F)] _dtype: StorageType,
) {
    let row = ABSOLUTE_POS;
    if row >= dscores.len() / n {
        terminate!();
    }
    let base = row * n;
    let mut dot = f32::new(0.0);
    let mut k = 0;
    while k < n {
        dot += f32::cast_from(grad_probs[base + k]) * f32::cast_from(probs[base + k]);
        k += 1;
    }
    let mut k = 0;
    while k < n {
        let p = f32::cast_from(probs[base + k]);
        dscores[base + k] = F::cast_from(p * (f32::cast_from(grad_probs[base + k]) - dot));
        k += 1;
    }
}
