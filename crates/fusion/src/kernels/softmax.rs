//! Softmax over the last dimension on contiguous f32 rows: Swin's window-attention softmax
//! with its bias gathered from the relative-position table and its shifted-window mask added
//! in the same pass, and the softmax backward. One multi-threaded pass each way.
//!
//! ```text
//! forward:  p = softmax(s + table[index[q·n + k], h] + mask[w mod num_windows, q, k])
//! backward: ds = p ⊙ (dp − Σ_k dp ⊙ p)
//! ```

use super::rows::{for_each_row_chunk, rows_per_task, sum_by};

/// The window-attention operands besides the scores: `table: [offsets, heads]` row-major,
/// `index: [n · n]` rows of the table, `mask: [num_windows, n, n]` or none.
pub struct WindowBias<'a> {
    /// The relative position bias table.
    pub table: &'a [f32],
    /// Its row of each `(q, k)` pair.
    pub index: &'a [usize],
    /// The shifted-window mask.
    pub mask: Option<&'a [f32]>,
}

/// `softmax(scores + bias)` for `scores: [windows, heads, n, n]` row-major → like `scores`.
pub fn window_softmax_forward(
    scores: &[f32],
    bias: &WindowBias<'_>,
    [_, heads, n, _]: [usize; 4],
) -> Vec<f32> {
    let mut probs = vec![0f32; scores.len()];
    let num_windows = bias.mask.map_or(1, |m| (m.len() / (n * n).max(1)).max(1));
    for_each_row_chunk(&mut probs, n, rows_per_task(n), |first_row, out| {
        for (i, out) in out.chunks_mut(n).enumerate() {
            let row = first_row + i;
            let (q, h, w) = (row % n, (row / n) % heads, row / (n * heads));
            let s = &scores[row * n..(row + 1) * n];
            let index = &bias.index[q * n..(q + 1) * n];
            let mask = bias.mask.map(|m| {
                let start = ((w % num_windows) * n + q) * n;
                &m[start..start + n]
            });
            for (k, o) in out.iter_mut().enumerate() {
                *o = s[k] + bias.table[index[k] * heads + h] + mask.map_or(0.0, |m| m[k]);
            }
            softmax_in_place(out);
        }
    });
    probs
}

/// `p ⊙ (dp − Σ_k dp ⊙ p)` for `probs`, `grad` of `rows × width` row-major.
pub fn softmax_backward(probs: &[f32], grad: &[f32], width: usize) -> Vec<f32> {
    let mut ds = vec![0f32; probs.len()];
    for_each_row_chunk(&mut ds, width, rows_per_task(width), |first_row, out| {
        for (i, out) in out.chunks_mut(width).enumerate() {
            let start = (first_row + i) * width;
            let (p, g) = (&probs[start..start + width], &grad[start..start + width]);
            let dot = sum_by(width, |k| g[k] * p[k]);
            for (k, o) in out.iter_mut().enumerate() {
                *o = p[k] * (g[k] - dot);
            }
        }
    });
    ds
}

/// Replaces the logits of one row with their softmax (max subtracted first).
fn softmax_in_place(row: &mut [f32]) {
    let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    for v in row.iter_mut() {
        *v = (*v - max).exp();
    }
    let total = sum_by(row.len(), |k| row[k]);
    for v in row.iter_mut() {
        *v /= total;
    }
}
