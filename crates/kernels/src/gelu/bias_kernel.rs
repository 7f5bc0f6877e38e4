//! CubeCL kernels of the bias + GELU backward: `dx = dy · gelu'(x + bias)` and
//! `dbias = Σ_rows dx`, the latter a column reduction done in two deterministic stages
//! (as LayerNorm's dgamma/dbeta): f32 partial sums per block of rows, then a sum over blocks.
//! No float atomics: each output cell has exactly one writer, so results are reproducible run
//! to run and need no device support for atomic float adds.
//!
//! Tensors are contiguous and read as vectors of `N` storage floats `F` (`N` divides `width`);
//! the partial sums are f32 vectors of the same `N`.

use burn::cubecl;
use cubecl::prelude::*;

use super::math::gelu_grad;

/// Stage 1, fused with the input gradient: one pass over `x` and `dy` writes `dx` and the
/// per-block column sums of `dx`.
///
/// Unit `(cube x, unit x)` owns column vector `c`; cube `y` owns rows
/// `[y · rows_per_block, (y + 1) · rows_per_block)`. Neighbouring units read neighbouring
/// columns of a row, so the loads coalesce.
///
/// - `x`, `dy`, `dx`: `[rows, width]`, storage `F`, as `width / N` vectors per row;
/// - `bias`: `[width]`, storage `F`;
/// - `dbias_part`: `[blocks, width]`, f32. The sum is taken over the f32 `dx`, before its
///   rounding to `F`.
#[cube(launch)]
pub(crate) fn bias_gelu_backward_partial_kernel<F: Float, N: Size>(
    x: &Tensor<Vector<F, N>>,
    bias: &Tensor<Vector<F, N>>,
    dy: &Tensor<Vector<F, N>>,
    dx: &mut Tensor<Vector<F, N>>,
    dbias_part: &mut Tensor<Vector<f32, N>>,
    rows_per_block: usize,
    #[define(F)] _dtype: StorageType,
) {
    let col = (CUBE_POS_X * CUBE_DIM_X + UNIT_POS_X) as usize;
    let block = CUBE_POS_Y as usize;
    let width_vecs = bias.len();
    if col >= width_vecs {
        terminate!();
    }
    let rows = x.len() / width_vecs;
    // The launcher sizes the grid so that every block starts within the rows.
    let first = block * rows_per_block;
    let mut last = first + rows_per_block;
    if last > rows {
        last = rows;
    }

    let b = Vector::<f32, N>::cast_from(bias[col]);
    let mut acc = Vector::<f32, N>::new(f32::new(0.0));
    for r in first..last {
        let i = r * width_vecs + col;
        let z = Vector::<f32, N>::cast_from(x[i]) + b;
        let d = Vector::<f32, N>::cast_from(dy[i]) * gelu_grad::<N>(z);
        dx[i] = Vector::cast_from(d);
        acc += d;
    }
    dbias_part[block * width_vecs + col] = acc;
}

/// Stage 2: `dbias[c] = Σ_blocks dbias_part[block, c]`, stored in `F`; one unit per column
/// vector. The block count is small (bounded by the launcher), so a serial loop suffices.
///
/// - `dbias_part`: `[blocks, width]`, f32;
/// - `dbias`: `[width]`, storage `F`.
#[cube(launch)]
pub(crate) fn column_sum_final_kernel<F: Float, N: Size>(
    dbias_part: &Tensor<Vector<f32, N>>,
    dbias: &mut Tensor<Vector<F, N>>,
    #[define(F)] _dtype: StorageType,
) {
    let col = ABSOLUTE_POS;
    let width_vecs = dbias.len();
    if col >= width_vecs {
        terminate!();
    }
    let blocks = dbias_part.len() / width_vecs;
    let mut acc = Vector::<f32, N>::new(f32::new(0.0));
    for b in 0..blocks {
        acc += dbias_part[b * width_vecs + col];
    }
    dbias[col] = Vector::cast_from(acc);
}
