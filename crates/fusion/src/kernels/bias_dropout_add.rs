//! `residual + dropout(x + bias, p)` on contiguous f32 rows, forward and backward, each one
//! multi-threaded pass. The keep-mask is burnacc's hash of `(seed, element index)`
//! (`burnacc_kernels::bias_dropout_add::mask`), evaluated per element in both passes exactly
//! as the CubeCL kernels and the host reference do, so the three drop the same elements and
//! no mask is stored.
//!
//! ```text
//! forward:  y = residual + (keep ? (x + bias) · scale : 0),   scale = 1 / (1 − p)
//! backward: dx = keep ? dy · scale : 0,   dbias = Σ_rows dx,   dresidual = dy
//! ```

use super::rows::{add_partials, for_each_row_chunk, rows_per_task};
use burnacc_kernels::bias_dropout_add::DropoutSeed;
use burnacc_kernels::bias_dropout_add::mask::{
    dropout_hash, dropout_key, dropout_scale, dropout_threshold,
};

/// The keep decision of every element: `keep(i)` for the element of row-major index `i`.
#[derive(Clone, Copy)]
struct Mask {
    key: u32,
    threshold: u32,
    scale: f32,
}

impl Mask {
    /// `None` at `p = 0`: nothing is dropped and nothing is scaled.
    fn new(p: f64, seed: DropoutSeed) -> Option<Self> {
        (p > 0.0).then(|| Self {
            key: dropout_key(seed),
            threshold: dropout_threshold(p),
            scale: dropout_scale(p) as f32,
        })
    }

    /// `v · scale` where element `index` is kept, else 0 (not `0 · v`: a dropped non-finite
    /// value gives 0, as in the kernels).
    #[inline(always)]
    fn apply(self, index: usize, v: f32) -> f32 {
        if dropout_hash(self.key, index as u32) >= self.threshold {
            v * self.scale
        } else {
            0.0
        }
    }
}

/// `y = residual + dropout(x + bias, p)`: `x`, `residual` `rows × width`, `bias` `[width]`
/// or `None`.
pub fn bias_dropout_add_forward(
    x: &[f32],
    bias: Option<&[f32]>,
    residual: &[f32],
    width: usize,
    p: f64,
    seed: DropoutSeed,
) -> Vec<f32> {
    let mask = Mask::new(p, seed);
    let mut y = vec![0f32; x.len()];
    for_each_row_chunk(&mut y, width, rows_per_task(width), |first_row, y| {
        let start = first_row * width;
        for (k, y) in y.iter_mut().enumerate() {
            let i = start + k;
            let v = x[i] + bias.map_or(0.0, |b| b[k % width]);
            *y = residual[i] + mask.map_or(v, |m| m.apply(i, v));
        }
    });
    y
}

/// `(dx, dbias)` from the upstream gradient `grad` (`rows × width`); `dbias` iff `with_bias`.
pub fn bias_dropout_add_backward(
    grad: &[f32],
    width: usize,
    p: f64,
    seed: DropoutSeed,
    with_bias: bool,
) -> (Vec<f32>, Option<Vec<f32>>) {
    let mask = Mask::new(p, seed);
    let mut dx = vec![0f32; grad.len()];
    let partials = for_each_row_chunk(&mut dx, width, rows_per_task(width), |first_row, dx| {
        let start = first_row * width;
        let mut dbias = vec![0f32; if with_bias { width } else { 0 }];
        for (k, dx) in dx.iter_mut().enumerate() {
            let i = start + k;
            *dx = mask.map_or(grad[i], |m| m.apply(i, grad[i]));
            if with_bias {
                dbias[k % width] += *dx;
            }
        }
        dbias
    });
    (dx, with_bias.then(|| add_partials(partials, width)))
}
