//! CubeCL kernels of the multi-tensor optimizer steps.
//!
//! One launch updates every tensor of a chunk: the tensors arrive as CubeCL sequences, which
//! are unrolled when the kernel is compiled (one kernel per chunk length and dtype), and the
//! whole grid sweeps each tensor in turn with a grid-stride loop, so tensors of any size share
//! one grid. Every tensor is contiguous (the launcher sees to it) and read as a flat array;
//! arithmetic is in f32 whatever the storage dtype.
//!
//! A skipped step (`found_inf[0] > 0`) writes every input back unchanged, so the outputs are
//! always fully written and a skipped step is still exact.

use burn::cubecl;
use cubecl::prelude::*;

/// The number of units in the grid: the stride of the grid-stride loops.
#[cube]
fn grid_units() -> usize {
    (CUBE_COUNT as usize) * (CUBE_DIM as usize)
}

/// `found_inf[0] > 0` when the launch has a flag (comptime `has_found_inf`), else false.
#[cube]
fn skipped(found_inf: &Tensor<f32>, #[comptime] has_found_inf: bool) -> bool {
    let mut skip = false;
    if comptime![has_found_inf] {
        skip = found_inf[0] > 0.0;
    }
    skip
}

/// Adam/AdamW over the chunk (see `AdamGroup` for the update).
///
/// - `params`, `grads`, `exp_avg`, `exp_avg_sq` and the three outputs: `n` contiguous tensors
///   each, storage `F`, the `i`-th ones of equal length;
/// - `step_size`, `bc2_sqrt`: f32 `[N]`, the per-tensor bias corrections of the whole group,
///   whose chunk starts at `flag_offset`;
/// - `found_inf`: f32 `[1]`, read only when `has_found_inf`;
/// - the scalars: see [`AdamScalars`](super::launch::AdamScalars), each computed in f64 on
///   the host (`1 − beta2` from an f32 `beta2` would be off by 1e-5 relative).
#[cube(launch)]
#[allow(clippy::too_many_arguments)]
pub(crate) fn adam_multi_tensor_kernel<F: Float>(
    params: &Sequence<Tensor<F>>,
    grads: &Sequence<Tensor<F>>,
    exp_avg: &Sequence<Tensor<F>>,
    exp_avg_sq: &Sequence<Tensor<F>>,
    step_size: &Tensor<f32>,
    bc2_sqrt: &Tensor<f32>,
    found_inf: &Tensor<f32>,
    new_params: &mut Sequence<Tensor<F>>,
    new_exp_avg: &mut Sequence<Tensor<F>>,
    new_exp_avg_sq: &mut Sequence<Tensor<F>>,
    flag_offset: u32,
    beta1: f32,
    one_minus_beta1: f32,
    beta2: f32,
    one_minus_beta2: f32,
    eps: f32,
    param_scale: f32,
    grad_decay: f32,
    #[comptime] has_found_inf: bool,
    #[define(F)] _dtype: StorageType,
) {
    let skip = skipped(found_inf, has_found_inf);
    let stride = grid_units();
    #[unroll]
    for t in 0..params.len() {
        let p_in = params.index(t);
        let g_in = grads.index(t);
        let m_in = exp_avg.index(t);
        let v_in = exp_avg_sq.index(t);
        let p_out = new_params.index_mut(t);
        let m_out = new_exp_avg.index_mut(t);
        let v_out = new_exp_avg_sq.index_mut(t);
        let size = step_size[flag_offset as usize + t];
        let bc2 = bc2_sqrt[flag_offset as usize + t];
        let len = p_in.len();
        let mut i = ABSOLUTE_POS;
        while i < len {
            let p = f32::cast_from(p_in[i]);
            let m = f32::cast_from(m_in[i]);
            let v = f32::cast_from(v_in[i]);
            if skip {
                p_out[i] = F::cast_from(p);
                m_out[i] = F::cast_from(m);
                v_out[i] = F::cast_from(v);
            } else {
                let g = f32::cast_from(g_in[i]) + grad_decay * p;
                let m_new = beta1 * m + one_minus_beta1 * g;
                let v_new = beta2 * v + one_minus_beta2 * g * g;
                let denom = v_new.sqrt() / bc2 + eps;
                p_out[i] = F::cast_from(p * param_scale - size * m_new / denom);
                m_out[i] = F::cast_from(m_new);
                v_out[i] = F::cast_from(v_new);
            }
            i += stride;
        }
    }
}

/// SGD with momentum over the chunk (see `SgdGroup` for the update).
///
/// - `params`, `grads`, `buffers` and the two outputs: `n` contiguous tensors each, storage
///   `F`, the `i`-th ones of equal length;
/// - `first`: f32 `[N]`, `> 0` where the buffer starts at this step, for the whole group,
///   whose chunk starts at `flag_offset`;
/// - `found_inf`: f32 `[1]`, read only when `has_found_inf`.
#[cube(launch)]
#[allow(clippy::too_many_arguments)]
pub(crate) fn sgd_momentum_multi_tensor_kernel<F: Float>(
    params: &Sequence<Tensor<F>>,
    grads: &Sequence<Tensor<F>>,
    buffers: &Sequence<Tensor<F>>,
    first: &Tensor<f32>,
    found_inf: &Tensor<f32>,
    new_params: &mut Sequence<Tensor<F>>,
    new_buffers: &mut Sequence<Tensor<F>>,
    flag_offset: u32,
    lr: f32,
    momentum: f32,
    one_minus_dampening: f32,
    weight_decay: f32,
    #[comptime] nesterov: bool,
    #[comptime] has_found_inf: bool,
    #[define(F)] _dtype: StorageType,
) {
    let skip = skipped(found_inf, has_found_inf);
    let stride = grid_units();
    #[unroll]
    for t in 0..params.len() {
        let p_in = params.index(t);
        let g_in = grads.index(t);
        let b_in = buffers.index(t);
        let p_out = new_params.index_mut(t);
        let b_out = new_buffers.index_mut(t);
        let starts = first[flag_offset as usize + t] > 0.0;
        let len = p_in.len();
        let mut i = ABSOLUTE_POS;
        while i < len {
            let p = f32::cast_from(p_in[i]);
            let b = f32::cast_from(b_in[i]);
            if skip {
                p_out[i] = F::cast_from(p);
                b_out[i] = F::cast_from(b);
            } else {
                let g = f32::cast_from(g_in[i]) + weight_decay * p;
                let mut b_new = g;
                if !starts {
                    b_new = momentum * b + one_minus_dampening * g;
                }
                let mut direction = b_new;
                if comptime![nesterov] {
                    direction = g + momentum * b_new;
                }
                p_out[i] = F::cast_from(p - lr * direction);
                b_out[i] = F::cast_from(b_new);
            }
            i += stride;
        }
    }
}

/// Plain SGD (no momentum) over the chunk: `p' = p − lr·(g + wd·p)`.
#[cube(launch)]
pub(crate) fn sgd_multi_tensor_kernel<F: Float>(
    params: &Sequence<Tensor<F>>,
    grads: &Sequence<Tensor<F>>,
    found_inf: &Tensor<f32>,
    new_params: &mut Sequence<Tensor<F>>,
    lr: f32,
    weight_decay: f32,
    #[comptime] has_found_inf: bool,
    #[define(F)] _dtype: StorageType,
) {
    let skip = skipped(found_inf, has_found_inf);
    let stride = grid_units();
    #[unroll]
    for t in 0..params.len() {
        let p_in = params.index(t);
        let g_in = grads.index(t);
        let p_out = new_params.index_mut(t);
        let len = p_in.len();
        let mut i = ABSOLUTE_POS;
        while i < len {
            let p = f32::cast_from(p_in[i]);
            if skip {
                p_out[i] = F::cast_from(p);
            } else {
                let g = f32::cast_from(g_in[i]) + weight_decay * p;
                p_out[i] = F::cast_from(p - lr * g);
            }
            i += stride;
        }
    }
}
