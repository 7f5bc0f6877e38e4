//! The multi-tensor steps on Flex (the CPU stacks' backend): one multi-threaded loop per
//! tensor that reads each element of the parameter, gradient and state once and writes the
//! new values in place wherever the tensor is not shared.
//!
//! Only f32 tensors take this path (master weights are f32); other dtypes use the reference.
//! The flags (`found_inf`, the per-tensor bias corrections) live in host memory on the CPU,
//! so reading them is free.

use burn::backend::flex::FlexTensor;
use burn::tensor::{DType, TensorMetadata};
use rayon::prelude::*;

use super::counters;
use super::group::{AdamGroup, AdamHyper, AdamUpdate, SgdGroup, SgdHyper, SgdUpdate};
use super::launch::AdamScalars;
use burn::backend::Flex;

/// Elements per parallel task: large enough to amortise the scheduling, small enough to
/// spread a single large tensor over every core.
const TASK_ELEMS: usize = 1 << 15;

/// Whether every tensor is f32 (the fused loop's only dtype).
pub(crate) fn all_f32<'a>(tensors: impl IntoIterator<Item = &'a FlexTensor>) -> bool {
    tensors.into_iter().all(|t| t.dtype() == DType::F32)
}

/// A contiguous tensor this code may write: `tensor` itself when it is the only reference to
/// a buffer it covers exactly, else a copy (counted: [`counters::BUFFER_COPIES`]).
fn writable(tensor: FlexTensor) -> FlexTensor {
    let input = tensor.storage::<f32>().as_ptr();
    // Flex's `to_contiguous` returns another reference to a buffer that is already contiguous:
    // the input is dropped before the write, so that only a buffer shared elsewhere is copied.
    let mut contiguous = tensor.to_contiguous();
    drop(tensor);
    // Copy-on-write: copies only when the buffer is shared.
    if contiguous.storage_mut::<f32>().as_ptr() != input {
        counters::BUFFER_COPIES.bump();
    }
    contiguous
}

/// The elements of a contiguous f32 view (a copy when strided).
fn values(tensor: &FlexTensor) -> std::borrow::Cow<'_, [f32]> {
    match tensor.as_slice::<f32>() {
        Some(slice) => std::borrow::Cow::Borrowed(slice),
        None => std::borrow::Cow::Owned(tensor.to_contiguous().as_slice::<f32>().unwrap().to_vec()),
    }
}

/// `found_inf > 0` (false when absent).
fn skipped(found_inf: Option<&FlexTensor>) -> bool {
    found_inf.is_some_and(|flag| values(flag)[0] > 0.0)
}

/// The fused Adam/AdamW step (f32 groups only; see [`AdamGroup`]).
pub(crate) fn multi_tensor_adam_flex(
    group: AdamGroup<Flex>,
    hyper: AdamHyper,
    found_inf: Option<FlexTensor>,
) -> AdamUpdate<Flex> {
    group.len();
    counters::ADAM_LAUNCHES.bump();
    if skipped(found_inf.as_ref()) {
        return AdamUpdate {
            params: group.params,
            exp_avg: group.exp_avg,
            exp_avg_sq: group.exp_avg_sq,
        };
    }
    let step_size = values(&group.step_size).into_owned();
    let bc2_sqrt = values(&group.bc2_sqrt).into_owned();
    let AdamScalars {
        beta1,
        one_minus_beta1,
        beta2,
        one_minus_beta2,
        eps,
        param_scale,
        grad_decay,
    } = AdamScalars::new(&hyper);
    let mut update = AdamUpdate {
        params: Vec::new(),
        exp_avg: Vec::new(),
        exp_avg_sq: Vec::new(),
    };
    let tensors = group
        .params
        .into_iter()
        .zip(group.grads)
        .zip(group.exp_avg.into_iter().zip(group.exp_avg_sq));
    for (i, ((param, grad), (m, v))) in tensors.enumerate() {
        let (mut param, mut m, mut v) = (writable(param), writable(m), writable(v));
        let grad = values(&grad);
        let (size, bc2) = (step_size[i], bc2_sqrt[i]);
        let step = |p: &mut [f32], m: &mut [f32], v: &mut [f32], g: &[f32]| {
            for (((p, m), v), &g) in p.iter_mut().zip(m).zip(v).zip(g) {
                let g = g + grad_decay * *p;
                *m = beta1 * *m + one_minus_beta1 * g;
                *v = beta2 * *v + one_minus_beta2 * g * g;
                *p = *p * param_scale - size * *m / (v.sqrt() / bc2 + eps);
            }
        };
        let (p, m_s, v_s) = (
            param.storage_mut::<f32>(),
            m.storage_mut::<f32>(),
            v.storage_mut::<f32>(),
        );
        if p.len() <= TASK_ELEMS {
            // One task: here, rather than waking a worker and waiting for it.
            step(p, m_s, v_s, &grad);
        } else {
            p.par_chunks_mut(TASK_ELEMS)
                .zip(m_s.par_chunks_mut(TASK_ELEMS))
                .zip(v_s.par_chunks_mut(TASK_ELEMS))
                .zip(grad.par_chunks(TASK_ELEMS))
                .for_each(|(((p, m), v), g)| step(p, m, v, g));
        }
        update.params.push(param);
        update.exp_avg.push(m);
        update.exp_avg_sq.push(v);
    }
    update
}

/// The fused SGD step, with or without momentum (f32 groups only; see [`SgdGroup`]).
pub(crate) fn multi_tensor_sgd_flex(
    group: SgdGroup<Flex>,
    hyper: SgdHyper,
    found_inf: Option<FlexTensor>,
) -> SgdUpdate<Flex> {
    group.len();
    counters::SGD_LAUNCHES.bump();
    if skipped(found_inf.as_ref()) {
        return SgdUpdate {
            params: group.params,
            momentum_buffer: group.momentum_buffer,
        };
    }
    let scalars = SgdScalars {
        lr: hyper.lr as f32,
        wd: hyper.weight_decay as f32,
        momentum: hyper.momentum as f32,
        // `1 − dampening` in f64 first, for the reason of `AdamScalars`.
        one_minus_dampening: (1.0 - hyper.dampening) as f32,
    };
    let nesterov = hyper.nesterov;
    let first = group.first.as_ref().map(|f| values(f).into_owned());
    let mut buffers = group.momentum_buffer.into_iter();
    let mut update = SgdUpdate {
        params: Vec::new(),
        momentum_buffer: Vec::new(),
    };
    for (i, (param, grad)) in group.params.into_iter().zip(group.grads).enumerate() {
        let mut param = writable(param);
        let grad = values(&grad);
        match buffers.next() {
            Some(buf) => {
                let starts = first
                    .as_ref()
                    .expect("multi_tensor_sgd: momentum buffers need the `first` flags")[i]
                    > 0.0;
                let mut buf = writable(buf);
                let step = sgd_momentum_step(starts, nesterov);
                let p = param.storage_mut::<f32>();
                let b = buf.storage_mut::<f32>();
                if p.len() <= TASK_ELEMS {
                    // One task: here, rather than waking a worker and waiting for it.
                    step(p, b, &grad, scalars);
                } else {
                    p.par_chunks_mut(TASK_ELEMS)
                        .zip(b.par_chunks_mut(TASK_ELEMS))
                        .zip(grad.par_chunks(TASK_ELEMS))
                        .for_each(|((p, b), g)| step(p, b, g, scalars));
                }
                update.momentum_buffer.push(buf);
            }
            None => {
                let SgdScalars { lr, wd, .. } = scalars;
                let step = |p: &mut [f32], g: &[f32]| {
                    for (p, &g) in p.iter_mut().zip(g) {
                        *p -= lr * (g + wd * *p);
                    }
                };
                let p = param.storage_mut::<f32>();
                if p.len() <= TASK_ELEMS {
                    step(p, &grad);
                } else {
                    p.par_chunks_mut(TASK_ELEMS)
                        .zip(grad.par_chunks(TASK_ELEMS))
                        .for_each(|(p, g)| step(p, g));
                }
            }
        }
        update.params.push(param);
    }
    update
}

/// The f32 scalars of an SGD step.
#[derive(Clone, Copy)]
struct SgdScalars {
    lr: f32,
    wd: f32,
    momentum: f32,
    one_minus_dampening: f32,
}

/// The SGD-with-momentum update of one run of `(param, buffer, grad)`, compiled once per
/// pair of flags so that its loop has no branch and vectorises. `STARTS`: the buffer starts
/// as the gradient (its first step); `NESTEROV`: Nesterov's direction.
type SgdMomentumStep = fn(&mut [f32], &mut [f32], &[f32], SgdScalars);

fn sgd_momentum_step(starts: bool, nesterov: bool) -> SgdMomentumStep {
    match (starts, nesterov) {
        (false, false) => sgd_momentum::<false, false>,
        (false, true) => sgd_momentum::<false, true>,
        (true, false) => sgd_momentum::<true, false>,
        (true, true) => sgd_momentum::<true, true>,
    }
}

fn sgd_momentum<const STARTS: bool, const NESTEROV: bool>(
    p: &mut [f32],
    b: &mut [f32],
    g: &[f32],
    s: SgdScalars,
) {
    for ((p, b), &g) in p.iter_mut().zip(b).zip(g) {
        let g = g + s.wd * *p;
        *b = if STARTS {
            g
        } else {
            s.momentum * *b + s.one_minus_dampening * g
        };
        let direction = if NESTEROV { g + s.momentum * *b } else { *b };
        *p -= s.lr * direction;
    }
}

/// Shapes of `a` and `b` agree, else a panic naming the list.
pub(crate) fn check_shapes(what: &str, name: &str, params: &[FlexTensor], others: &[FlexTensor]) {
    for (i, (p, o)) in params.iter().zip(others).enumerate() {
        assert!(
            p.shape() == o.shape(),
            "{what}: {name}[{i}] has shape {:?} but params[{i}] has {:?}",
            o.shape(),
            p.shape()
        );
    }
}
