//! CubeCL kernels of the fused bias + dropout + residual add:
//!
//! ```text
//! forward:   y  = residual + keep · (x + bias) / (1 − p)
//! backward:  dx = keep · dy / (1 − p),   dbias = Σ_rows dx,   d_residual = dy
//! ```
//!
//! (inverted dropout, as `torch.nn.functional.dropout`). `keep` is regenerated per element
//! from the seed by [`keep`], the device twin of the host hash in `mask.rs`, so no mask is
//! stored between the forward and the backward.
//!
//! The seed is an input tensor `[2]` of the backend's int element `I` (two words in
//! `[0, 2³¹)`, see `seed.rs`), read by every unit: it may have been drawn on the device by the
//! backend's generator, and nothing is read back to the host. Each unit folds the two words
//! into the hash state [`dropout_key`] (two hash blocks, negligible next to its memory
//! traffic).
//!
//! Every kernel reads contiguous tensors flattened to `[rows, width]` by linear index, is
//! generic over the storage float `F` (f32, f16, bf16, ...) and computes in f32. The launcher
//! selects variants with comptime flags: `has_bias` (a bias is read), `dropout` (`p > 0`: the
//! seed is read and the mask evaluated; `p = 0` is the inference form, with no hashing at all)
//! and `write_dx`.

use burn::cubecl;
use cubecl::prelude::*;

/// One MurmurHash3_x86_32 body step, as `mask::murmur3_block`: mixes block `k` into `h`.
/// Every operation wraps modulo 2³² on every target, which keeps host and device identical.
/// CubeCL has no rotate instruction, hence the rotations spelled as two shifts.
#[cube]
#[allow(clippy::manual_rotate)]
fn murmur3_block(h: u32, k: u32) -> u32 {
    let k = k * 0xcc9e2d51u32;
    let k = (k << 15u32) | (k >> 17u32);
    let k = k * 0x1b873593u32;
    let h = h ^ k;
    let h = (h << 13u32) | (h >> 19u32);
    h * 5u32 + 0xe6546b64u32
}

/// The hash state after the two seed blocks `word₀ ‖ word₁`, read from the seed tensor
/// (`[2]`, int element `I`, values in `[0, 2³¹)`, hence exact as u32). Mirrors
/// `mask::dropout_key`.
#[cube]
pub(crate) fn dropout_key<I: Int>(seed: &Tensor<I>) -> u32 {
    murmur3_block(
        murmur3_block(0u32, u32::cast_from(seed[0])),
        u32::cast_from(seed[1]),
    )
}

/// Whether element `index` is kept: MurmurHash3_x86_32 of `word₀ ‖ word₁ ‖ index`,
/// resumed from `key` (the state after the two seed blocks, [`dropout_key`]), compared
/// with `threshold = ⌊p · 2³²⌋`. Mirrors `mask::dropout_hash` step by step.
#[cube]
pub(crate) fn keep(key: u32, index: u32, threshold: u32) -> bool {
    // 12 = the message length in bytes, mixed in before the finalizer.
    let h = murmur3_block(key, index) ^ 12u32;
    let h = h ^ (h >> 16u32);
    let h = h * 0x85ebca6bu32;
    let h = h ^ (h >> 13u32);
    let h = h * 0xc2b2ae35u32;
    let h = h ^ (h >> 16u32);
    h >= threshold
}

/// Forward, one unit per element: `y = residual + keep · (x + bias) · scale`.
///
/// - `x`, `residual`, `y`: contiguous `[rows, width]`, storage `F`;
/// - `bias`: contiguous `[width]`, storage `F`; not read unless `has_bias` (the launcher then
///   passes any tensor of the right dtype);
/// - `seed`: the seed tensor `[2]` (int element `I`), not read unless `dropout`;
/// - `threshold`: the mask's threshold (see [`keep`]), unused unless `dropout`;
/// - `scale`: `1 / (1 − p)`, rounded to f32 from f64.
///
/// A dropped element stores `residual` exactly (the masked value is replaced, not multiplied
/// by zero).
#[cube(launch)]
#[allow(clippy::too_many_arguments)]
pub(crate) fn bias_dropout_add_forward_kernel<F: Float, I: Int>(
    x: &Tensor<F>,
    bias: &Tensor<F>,
    residual: &Tensor<F>,
    y: &mut Tensor<F>,
    seed: &Tensor<I>,
    threshold: u32,
    scale: f32,
    #[comptime] has_bias: bool,
    #[comptime] dropout: bool,
    #[define(F, I)] _dtypes: [StorageType; 2],
) {
    let pos = ABSOLUTE_POS;
    if pos >= y.len() {
        terminate!();
    }
    let mut v = f32::cast_from(x[pos]);
    if has_bias {
        v += f32::cast_from(bias[pos % x.shape(1)]);
    }
    if dropout {
        if keep(dropout_key::<I>(seed), pos as u32, threshold) {
            v *= scale;
        } else {
            v = f32::new(0.0);
        }
    }
    y[pos] = F::cast_from(f32::cast_from(residual[pos]) + v);
}

/// Backward without a bias, one unit per element: `dx = keep · dy · scale`.
///
/// `grad_out`, `dx`: contiguous `[rows, width]`, storage `F`; `seed`, `threshold`, `scale` as
/// in the forward (the launcher only runs it for `p > 0`: at `p = 0`, `dx = dy`).
#[cube(launch)]
pub(crate) fn bias_dropout_add_backward_dx_kernel<F: Float, I: Int>(
    grad_out: &Tensor<F>,
    dx: &mut Tensor<F>,
    seed: &Tensor<I>,
    threshold: u32,
    scale: f32,
    #[define(F, I)] _dtypes: [StorageType; 2],
) {
    let pos = ABSOLUTE_POS;
    if pos >= dx.len() {
        terminate!();
    }
    let mut g = f32::new(0.0);
    if keep(dropout_key::<I>(seed), pos as u32, threshold) {
        g = f32::cast_from(grad_out[pos]) * scale;
    }
    dx[pos] = F::cast_from(g);
}

/// Backward with a bias, stage 1: `dx` and partial column sums of it over a block of rows, in
/// one pass over `dy`.
///
/// Unit `(cube x, unit x)` owns one column; cube `y` owns rows
/// `[y · rows_per_block, (y + 1) · rows_per_block)`; `seed` (read only when `dropout`),
/// `threshold`, `scale` as in the forward. For each of its rows the unit computes
/// `dx = keep · dy · scale` in f32, stores it (when `write_dx`; at `p = 0` the launcher returns
/// `dy` itself as `dx` and only the sums are needed) and accumulates it, then writes
/// `dbias_part[y, c] = Σ_rows dx` (f32 `[blocks, width]`). Neighbouring units read neighbouring
/// columns of a row, so the loads coalesce; every output cell has exactly one writer, so no
/// atomics are needed and the sums are deterministic. The sum uses the f32 value of `dx`, not
/// its rounding to `F`.
#[cube(launch)]
#[allow(clippy::too_many_arguments)]
pub(crate) fn bias_dropout_add_backward_columns_kernel<F: Float, I: Int>(
    grad_out: &Tensor<F>,
    dx: &mut Tensor<F>,
    dbias_part: &mut Tensor<f32>,
    rows_per_block: usize,
    seed: &Tensor<I>,
    threshold: u32,
    scale: f32,
    #[comptime] dropout: bool,
    #[comptime] write_dx: bool,
    #[define(F, I)] _dtypes: [StorageType; 2],
) {
    let col = (CUBE_POS_X * CUBE_DIM_X + UNIT_POS_X) as usize;
    let block = CUBE_POS_Y as usize;
    let rows = grad_out.shape(0);
    let width = grad_out.shape(1);
    if col >= width {
        terminate!();
    }
    // The launcher sizes the grid so that every block starts within the rows.
    let first = block * rows_per_block;
    let mut last = first + rows_per_block;
    if last > rows {
        last = rows;
    }

    // The seed's hash state, once per unit (0 when unused: `keep` is not evaluated then).
    let mut key = 0u32;
    if dropout {
        key = dropout_key::<I>(seed);
    }

    let mut acc = f32::new(0.0);
    for r in first..last {
        let pos = r * width + col;
        let mut g = f32::cast_from(grad_out[pos]);
        if dropout {
            if keep(key, pos as u32, threshold) {
                g *= scale;
            } else {
                g = f32::new(0.0);
            }
        }
        if write_dx {
            dx[pos] = F::cast_from(g);
        }
        acc += g;
    }
    dbias_part[block * width + col] = acc;
}

/// Backward with a bias, stage 2: sums the f32 `[blocks, width]` partials over the blocks and
/// stores `dbias` (`[width]`) in the storage float `F`. One unit per column; the block count is
/// small (bounded by the launcher), so a serial loop suffices.
#[cube(launch)]
pub(crate) fn bias_dropout_add_backward_dbias_kernel<F: Float>(
    dbias_part: &Tensor<f32>,
    dbias: &mut Tensor<F>,
    #[define(F)] _dtype: StorageType,
) {
    let col = ABSOLUTE_POS;
    let width = dbias_part.shape(1);
    if col >= width {
        terminate!();
    }
    let mut acc = f32::new(0.0);
    for b in 0..dbias_part.shape(0) {
        acc += dbias_part[b * width + col];
    }
    dbias[col] = F::cast_from(acc);
}
