//! CubeCL kernels of the fused LayerNorm.
//!
//! Every kernel reads its tensors as 2-D `[rows, width]` through their strides and is generic
//! over the storage float `F` (f32, f16, bf16, ...), while every sum is accumulated in f32.
//! The per-row statistics `mean` and `rstd` are always f32 `[rows]`.
//!
//! Row kernels (forward, backward dx) run one cube per row. The launcher picks the cube count
//! with the hardware limits in mind, so the grid may hold a few more cubes than rows; those
//! extra cubes exit at once, before any barrier, which keeps every barrier uniform.

use burn::cubecl;
use cubecl::prelude::*;

use crate::cube_tree::{cube_sum, cube_sum_pair};

/// Forward: `y = (x − mean) · rstd · gamma + beta` for one row per cube.
///
/// - `x`, `y`: `[rows, width]`, storage `F`;
/// - `gamma`, `beta`: `[width]`, storage `F`;
/// - `mean`, `rstd`: `[rows]`, f32 (saved for the backward);
/// - `block_size`: the cube size (a power of two), which sizes the shared arrays.
///
/// The variance is computed in a second pass over the row, around the already known mean,
/// rather than as `E[x²] − E[x]²`: one more read of the row (a few KiB, likely still cached)
/// buys a variance that does not lose digits to cancellation when `|mean| ≫ std`.
#[cube(launch)]
pub(crate) fn layer_norm_forward_kernel<F: Float>(
    x: &Tensor<F>,
    gamma: &Tensor<F>,
    beta: &Tensor<F>,
    y: &mut Tensor<F>,
    mean: &mut Tensor<f32>,
    rstd: &mut Tensor<f32>,
    eps: f32,
    #[comptime] block_size: u32,
    #[define(F)] _dtype: StorageType,
) {
    let row = CUBE_POS;
    if row >= x.shape(0) {
        terminate!();
    }
    let width = x.shape(1);
    let unit = UNIT_POS_X as usize;
    let step = CUBE_DIM_X as usize;
    let x_row = row * x.stride(0);
    let x_col = x.stride(1);
    let width_f = f32::cast_from(width);

    let mut sum_x = SharedMemory::<f32>::new(block_size as usize);
    let mut sum_sq = SharedMemory::<f32>::new(block_size as usize);

    let mut acc = f32::new(0.0);
    let mut c = unit;
    while c < width {
        acc += f32::cast_from(x[x_row + c * x_col]);
        c += step;
    }
    sum_x[unit] = acc;
    cube_sum(&mut sum_x);
    let row_mean = sum_x[0] / width_f;

    let mut acc_sq = f32::new(0.0);
    let mut c = unit;
    while c < width {
        let d = f32::cast_from(x[x_row + c * x_col]) - row_mean;
        acc_sq += d * d;
        c += step;
    }
    sum_sq[unit] = acc_sq;
    cube_sum(&mut sum_sq);
    // Biased variance (divide by width), as torch.nn.LayerNorm.
    let row_rstd = f32::new(1.0) / (sum_sq[0] / width_f + eps).sqrt();

    let y_row = row * y.stride(0);
    let y_col = y.stride(1);
    let g_col = gamma.stride(0);
    let b_col = beta.stride(0);
    let mut c = unit;
    while c < width {
        let xhat = (f32::cast_from(x[x_row + c * x_col]) - row_mean) * row_rstd;
        let out = xhat * f32::cast_from(gamma[c * g_col]) + f32::cast_from(beta[c * b_col]);
        y[y_row + c * y_col] = F::cast_from(out);
        c += step;
    }

    if unit == 0 {
        mean[row * mean.stride(0)] = row_mean;
        rstd[row * rstd.stride(0)] = row_rstd;
    }
}

/// Backward, input gradient, one row per cube:
/// `dx = rstd · (gγ − mean(gγ) − x̂ · mean(gγ · x̂))` with `gγ = grad_out · gamma` and
/// `x̂ = (x − mean) · rstd`.
///
/// - `x`, `grad_out`, `dx`: `[rows, width]`, storage `F`;
/// - `gamma`: `[width]`, storage `F`;
/// - `mean`, `rstd`: `[rows]`, f32, as saved by the forward.
#[cube(launch)]
pub(crate) fn layer_norm_backward_dx_kernel<F: Float>(
    x: &Tensor<F>,
    gamma: &Tensor<F>,
    grad_out: &Tensor<F>,
    mean: &Tensor<f32>,
    rstd: &Tensor<f32>,
    dx: &mut Tensor<F>,
    #[comptime] block_size: u32,
    #[define(F)] _dtype: StorageType,
) {
    let row = CUBE_POS;
    if row >= x.shape(0) {
        terminate!();
    }
    let width = x.shape(1);
    let unit = UNIT_POS_X as usize;
    let step = CUBE_DIM_X as usize;
    let x_row = row * x.stride(0);
    let x_col = x.stride(1);
    let g_row = row * grad_out.stride(0);
    let g_col = grad_out.stride(1);
    let gamma_col = gamma.stride(0);
    let row_mean = mean[row * mean.stride(0)];
    let row_rstd = rstd[row * rstd.stride(0)];

    let mut sum_gg = SharedMemory::<f32>::new(block_size as usize);
    let mut sum_ggx = SharedMemory::<f32>::new(block_size as usize);

    let mut acc_gg = f32::new(0.0);
    let mut acc_ggx = f32::new(0.0);
    let mut c = unit;
    while c < width {
        let xhat = (f32::cast_from(x[x_row + c * x_col]) - row_mean) * row_rstd;
        let gg = f32::cast_from(grad_out[g_row + c * g_col]) * f32::cast_from(gamma[c * gamma_col]);
        acc_gg += gg;
        acc_ggx += gg * xhat;
        c += step;
    }
    sum_gg[unit] = acc_gg;
    sum_ggx[unit] = acc_ggx;
    cube_sum_pair(&mut sum_gg, &mut sum_ggx);
    let width_f = f32::cast_from(width);
    let mean_gg = sum_gg[0] / width_f;
    let mean_ggx = sum_ggx[0] / width_f;

    let dx_row = row * dx.stride(0);
    let dx_col = dx.stride(1);
    let mut c = unit;
    while c < width {
        // Recomputed rather than kept from the first loop: a thread may own any number of
        // columns, and registers cannot hold a row of unknown width.
        let xhat = (f32::cast_from(x[x_row + c * x_col]) - row_mean) * row_rstd;
        let gg = f32::cast_from(grad_out[g_row + c * g_col]) * f32::cast_from(gamma[c * gamma_col]);
        dx[dx_row + c * dx_col] = F::cast_from(row_rstd * (gg - mean_gg - xhat * mean_ggx));
        c += step;
    }
}

/// Backward, parameter gradients, stage 1: partial column sums over a block of rows.
///
/// Unit `(cube x, unit x)` owns one column; cube `y` owns rows
/// `[y · rows_per_block, (y + 1) · rows_per_block)`. Writes
/// `dgamma_part[y, c] = Σ_rows grad_out · x̂` and `dbeta_part[y, c] = Σ_rows grad_out`
/// (f32 `[blocks, width]`). Neighbouring units read neighbouring columns of a row, so the
/// loads coalesce; no atomics are needed since every output cell has exactly one writer.
#[cube(launch)]
pub(crate) fn layer_norm_backward_params_partial_kernel<F: Float>(
    x: &Tensor<F>,
    grad_out: &Tensor<F>,
    mean: &Tensor<f32>,
    rstd: &Tensor<f32>,
    dgamma_part: &mut Tensor<f32>,
    dbeta_part: &mut Tensor<f32>,
    rows_per_block: usize,
    #[define(F)] _dtype: StorageType,
) {
    let col = (CUBE_POS_X * CUBE_DIM_X + UNIT_POS_X) as usize;
    let block = CUBE_POS_Y as usize;
    let width = x.shape(1);
    let rows = x.shape(0);
    if col >= width {
        terminate!();
    }
    // The launcher sizes the grid so that every block starts within the rows.
    let first = block * rows_per_block;
    let mut last = first + rows_per_block;
    if last > rows {
        last = rows;
    }

    let mut acc_gamma = f32::new(0.0);
    let mut acc_beta = f32::new(0.0);
    for r in first..last {
        let xhat = (f32::cast_from(x[r * x.stride(0) + col * x.stride(1)])
            - mean[r * mean.stride(0)])
            * rstd[r * rstd.stride(0)];
        let g = f32::cast_from(grad_out[r * grad_out.stride(0) + col * grad_out.stride(1)]);
        acc_gamma += g * xhat;
        acc_beta += g;
    }
    dgamma_part[block * dgamma_part.stride(0) + col * dgamma_part.stride(1)] = acc_gamma;
    dbeta_part[block * dbeta_part.stride(0) + col * dbeta_part.stride(1)] = acc_beta;
}

/// Backward, parameter gradients, stage 2: sums the `[blocks, width]` f32 partials over the
/// blocks and stores `dgamma`, `dbeta` (`[width]`) in the storage float `F`. One unit per
/// column; the block count is small (bounded by the launcher), so a serial loop suffices.
#[cube(launch)]
pub(crate) fn layer_norm_backward_params_final_kernel<F: Float>(
    dgamma_part: &Tensor<f32>,
    dbeta_part: &Tensor<f32>,
    dgamma: &mut Tensor<F>,
    dbeta: &mut Tensor<F>,
    #[define(F)] _dtype: StorageType,
) {
    let col = ABSOLUTE_POS;
    let width = dgamma_part.shape(1);
    if col >= width {
        terminate!();
    }
    let mut acc_gamma = f32::new(0.0);
    let mut acc_beta = f32::new(0.0);
    for b in 0..dgamma_part.shape(0) {
        acc_gamma += dgamma_part[b * dgamma_part.stride(0) + col * dgamma_part.stride(1)];
        acc_beta += dbeta_part[b * dbeta_part.stride(0) + col * dbeta_part.stride(1)];
    }
    dgamma[col * dgamma.stride(0)] = F::cast_from(acc_gamma);
    dbeta[col * dbeta.stride(0)] = F::cast_from(acc_beta);
}
