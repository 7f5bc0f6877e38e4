//! CubeCL kernels of the multi-tensor optimizer steps.
//!
//! One launch updates every tensor of a chunk: the tensors arrive as CubeCL sequences, which
//! are unrolled when the kernel is compiled (one kernel per chunk length and dtype), and the
//! whole grid sweeps each tensor in turn with a grid-stride loop, so tensors of any size share
//! one grid. Every tensor is contiguous (the launcher sees to it) and read as a flat array of
//! vectors of `N` elements, `N` dividing the length of every tensor of the chunk: a unit loads
//! and stores whole vectors, as Burn's element-wise kernels do (scalar loads made the step
//! 2.4× slower than Burn's fused element-wise AdamW on lavapipe). Arithmetic is in f32
//! whatever the storage dtype.
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
pub(crate) fn adam_multi_tensor_kernel<F: Float, N: Size>(
    params: &Sequence<Tensor<Vector<F, N>>>,
    grads: &Sequence<Tensor<Vector<F, N>>>,
    exp_avg: &Sequence<Tensor<Vector<F, N>>>,
    exp_avg_sq: &Sequence<Tensor<Vector<F, N>>>,
    step_size: &Tensor<f32>,
    bc2_sqrt: &Tensor<f32>,
    found_inf: &Tensor<f32>,
    new_params: &mut Sequence<Tensor<Vector<F, N>>>,
    new_exp_avg: &mut Sequence<Tensor<Vector<F, N>>>,
    new_exp_avg_sq: &mut Sequence<Tensor<Vector<F, N>>>,
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
        let size = Vector::new(step_size[flag_offset as usize + t]);
        let bc2 = Vector::new(bc2_sqrt[flag_offset as usize + t]);
        let len = p_in.len();
        let mut i = ABSOLUTE_POS;
        while i < len {
            if skip {
                p_out[i] = p_in[i];
                m_out[i] = m_in[i];
                v_out[i] = v_in[i];
            } else {
                let p = Vector::<f32, N>::cast_from(p_in[i]);
                let m = Vector::<f32, N>::cast_from(m_in[i]);
                let v = Vector::<f32, N>::cast_from(v_in[i]);
                let g = Vector::<f32, N>::cast_from(g_in[i]) + Vector::new(grad_decay) * p;
                let m_new = Vector::new(beta1) * m + Vector::new(one_minus_beta1) * g;
                let v_new = Vector::new(beta2) * v + Vector::new(one_minus_beta2) * g * g;
                let denom = v_new.sqrt() / bc2 + Vector::new(eps);
                p_out[i] = Vector::cast_from(p * Vector::new(param_scale) - size * m_new / denom);
                m_out[i] = Vector::cast_from(m_new);
                v_out[i] = Vector::cast_from(v_new);
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
pub(crate) fn sgd_momentum_multi_tensor_kernel<F: Float, N: Size>(
    params: &Sequence<Tensor<Vector<F, N>>>,
    grads: &Sequence<Tensor<Vector<F, N>>>,
    buffers: &Sequence<Tensor<Vector<F, N>>>,
    first: &Tensor<f32>,
    found_inf: &Tensor<f32>,
    new_params: &mut Sequence<Tensor<Vector<F, N>>>,
    new_buffers: &mut Sequence<Tensor<Vector<F, N>>>,
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
            if skip {
                p_out[i] = p_in[i];
                b_out[i] = b_in[i];
            } else {
                let p = Vector::<f32, N>::cast_from(p_in[i]);
                let g = Vector::<f32, N>::cast_from(g_in[i]) + Vector::new(weight_decay) * p;
                let mut b_new = g;
                if !starts {
                    let b = Vector::<f32, N>::cast_from(b_in[i]);
                    b_new = Vector::new(momentum) * b + Vector::new(one_minus_dampening) * g;
                }
                let mut direction = b_new;
                if comptime![nesterov] {
                    direction = g + Vector::new(momentum) * b_new;
                }
                p_out[i] = Vector::cast_from(p - Vector::new(lr) * direction);
                b_out[i] = Vector::cast_from(b_new);
            }
            i += stride;
        }
    }
}

/// Plain SGD (no momentum) over the chunk: `p' = p − lr·(g + wd·p)`.
#[cube(launch)]
pub(crate) fn sgd_multi_tensor_kernel<F: Float, N: Size>(
    params: &Sequence<Tensor<Vector<F, N>>>,
    grads: &Sequence<Tensor<Vector<F, N>>>,
    found_inf: &Tensor<f32>,
    new_params: &mut Sequence<Tensor<Vector<F, N>>>,
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
            if skip {
                p_out[i] = p_in[i];
            } else {
                let p = Vector::<f32, N>::cast_from(p_in[i]);
                let g = Vector::<f32, N>::cast_from(g_in[i]) + Vector::new(weight_decay) * p;
                p_out[i] = Vector::cast_from(p - Vector::new(lr) * g);
            }
            i += stride;
        }
    }
}
