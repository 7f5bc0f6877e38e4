//! The optimizer updates with plain Burn ops, one tensor at a time: the ground truth of the
//! fused paths, and the path of backends without one. burnacc's sync-free optimizers
//! (`burnacc-amp`) use the per-tensor functions for their unfused step, so both paths share
//! one definition of the maths.

use burn::tensor::backend::Backend;
use burn::tensor::ops::FloatTensor;
use burn::tensor::{Bool, Shape, Tensor, TensorMetadata, TensorPrimitive};

use super::group::{AdamGroup, AdamHyper, AdamUpdate, SgdGroup, SgdHyper, SgdUpdate};

/// One Adam/AdamW step of one tensor, unmasked (see [`AdamGroup`] for the update).
///
/// `param`, `grad`, `exp_avg`, `exp_avg_sq`: one shape and dtype; `step_size`, `bc2_sqrt`:
/// f32 `[1]` (cast to the parameter's dtype and broadcast). Returns `(param, exp_avg,
/// exp_avg_sq)` after the step, in the parameter's dtype.
pub fn adam_tensor_reference<B: Backend, const D: usize>(
    param: Tensor<B, D>,
    grad: Tensor<B, D>,
    exp_avg: Tensor<B, D>,
    exp_avg_sq: Tensor<B, D>,
    step_size: Tensor<B, 1>,
    bc2_sqrt: Tensor<B, 1>,
    hyper: &AdamHyper,
) -> (Tensor<B, D>, Tensor<B, D>, Tensor<B, D>) {
    let wd = hyper.weight_decay;
    let (grad, decayed) = match hyper.decoupled {
        _ if wd == 0.0 => (grad, param),
        false => (grad + param.clone().mul_scalar(wd), param),
        true => (grad, param.mul_scalar(1.0 - hyper.lr * wd)),
    };
    let new_m = exp_avg.mul_scalar(hyper.beta1) + grad.clone().mul_scalar(1.0 - hyper.beta1);
    let new_v =
        exp_avg_sq.mul_scalar(hyper.beta2) + (grad.clone() * grad).mul_scalar(1.0 - hyper.beta2);
    let dtype = decayed.dtype();
    let step_size = step_size.cast(dtype).reshape([1; D]);
    let bc2_sqrt = bc2_sqrt.cast(dtype).reshape([1; D]);
    let denom = (new_v.clone().sqrt() / bc2_sqrt).add_scalar(hyper.eps);
    let new_param = decayed - new_m.clone() * step_size / denom;
    (new_param, new_m, new_v)
}

/// One SGD step of one tensor, unmasked (see [`SgdGroup`] for the update).
///
/// `param`, `grad` and `buffer` (when the momentum is not 0): one shape and dtype; `first`:
/// bool `[1]`, true where the buffer starts at this step. Returns `(param, buffer)` after the
/// step (`None` without momentum).
pub fn sgd_tensor_reference<B: Backend, const D: usize>(
    param: Tensor<B, D>,
    grad: Tensor<B, D>,
    buffer: Option<(Tensor<B, D>, Tensor<B, 1, Bool>)>,
    hyper: &SgdHyper,
) -> (Tensor<B, D>, Option<Tensor<B, D>>) {
    let grad = if hyper.weight_decay != 0.0 {
        grad + param.clone().mul_scalar(hyper.weight_decay)
    } else {
        grad
    };
    let (direction, buffer) = match buffer {
        Some((buf, first)) if hyper.momentum != 0.0 => {
            let first = first.reshape([1; D]).expand(buf.shape());
            let continued =
                buf.mul_scalar(hyper.momentum) + grad.clone().mul_scalar(1.0 - hyper.dampening);
            let new_buf = continued.mask_where(first, grad.clone());
            let direction = if hyper.nesterov {
                grad + new_buf.clone().mul_scalar(hyper.momentum)
            } else {
                new_buf.clone()
            };
            (direction, Some(new_buf))
        }
        _ => (grad, None),
    };
    (param - direction.mul_scalar(hyper.lr), buffer)
}

/// `old` where `skip` (bool `[1]`), else `new`: a select, so a skipped step's inf or NaN never
/// reaches the result.
pub fn keep_unless_skipped<B: Backend, const D: usize>(
    new: Tensor<B, D>,
    old: Tensor<B, D>,
    skip: Option<&Tensor<B, 1, Bool>>,
) -> Tensor<B, D> {
    match skip {
        None => new,
        Some(skip) => new.mask_where(skip.clone().reshape([1; D]).expand(old.shape()), old),
    }
}

/// Any shape → `[numel]` (element-wise maths does not need the shape).
fn flat<B: Backend>(tensor: FloatTensor<B>) -> Tensor<B, 1> {
    let numel = tensor.shape().num_elements();
    Tensor::from_primitive(TensorPrimitive::Float(B::float_reshape(
        tensor,
        Shape::new([numel]),
    )))
}

/// `tensor: [n]` → `[1]`, its `i`-th element.
fn element<B: Backend>(tensor: &Tensor<B, 1>, i: usize) -> Tensor<B, 1> {
    tensor.clone().slice([i..i + 1])
}

/// `found_inf > 0`, bool `[1]`.
fn skip_flag<B: Backend>(found_inf: Option<FloatTensor<B>>) -> Option<Tensor<B, 1, Bool>> {
    found_inf.map(|f| Tensor::<B, 1>::from_primitive(TensorPrimitive::Float(f)).greater_elem(0.0))
}

/// [`MultiTensorOptim::multi_tensor_adam`](super::MultiTensorOptim::multi_tensor_adam) with
/// [`adam_tensor_reference`] per tensor.
pub fn adam_group_reference<B: Backend>(
    group: AdamGroup<B>,
    hyper: AdamHyper,
    found_inf: Option<FloatTensor<B>>,
) -> AdamUpdate<B> {
    group.len();
    let skip = skip_flag::<B>(found_inf);
    let step_size = Tensor::<B, 1>::from_primitive(TensorPrimitive::Float(group.step_size));
    let bc2_sqrt = Tensor::<B, 1>::from_primitive(TensorPrimitive::Float(group.bc2_sqrt));
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
        let shape = param.shape();
        let (param, grad, m, v) = (
            flat::<B>(param),
            flat::<B>(grad),
            flat::<B>(m),
            flat::<B>(v),
        );
        let (new_p, new_m, new_v) = adam_tensor_reference(
            param.clone(),
            grad,
            m.clone(),
            v.clone(),
            element(&step_size, i),
            element(&bc2_sqrt, i),
            &hyper,
        );
        let restore = |new: Tensor<B, 1>, old: Tensor<B, 1>| {
            keep_unless_skipped(new, old, skip.as_ref())
                .into_primitive()
                .tensor()
        };
        update
            .params
            .push(B::float_reshape(restore(new_p, param), shape.clone()));
        update
            .exp_avg
            .push(B::float_reshape(restore(new_m, m), shape.clone()));
        update
            .exp_avg_sq
            .push(B::float_reshape(restore(new_v, v), shape));
    }
    update
}

/// [`MultiTensorOptim::multi_tensor_sgd`](super::MultiTensorOptim::multi_tensor_sgd) with
/// [`sgd_tensor_reference`] per tensor.
pub fn sgd_group_reference<B: Backend>(
    group: SgdGroup<B>,
    hyper: SgdHyper,
    found_inf: Option<FloatTensor<B>>,
) -> SgdUpdate<B> {
    group.len();
    let skip = skip_flag::<B>(found_inf);
    let first = group
        .first
        .map(|f| Tensor::<B, 1>::from_primitive(TensorPrimitive::Float(f)).greater_elem(0.0));
    let mut buffers = group.momentum_buffer.into_iter();
    let mut update = SgdUpdate {
        params: Vec::new(),
        momentum_buffer: Vec::new(),
    };
    for (i, (param, grad)) in group.params.into_iter().zip(group.grads).enumerate() {
        let shape = param.shape();
        let (param, grad) = (flat::<B>(param), flat::<B>(grad));
        let buffer = match (buffers.next(), &first) {
            (Some(buf), Some(first)) => Some((flat::<B>(buf), first.clone().slice([i..i + 1]))),
            (Some(_), None) => panic!("multi_tensor_sgd: momentum buffers need the `first` flags"),
            (None, _) => None,
        };
        let old_buf = buffer.as_ref().map(|(buf, _)| buf.clone());
        let (new_p, new_buf) = sgd_tensor_reference(param.clone(), grad, buffer, &hyper);
        let new_p = keep_unless_skipped(new_p, param, skip.as_ref());
        update.params.push(B::float_reshape(
            new_p.into_primitive().tensor(),
            shape.clone(),
        ));
        if let (Some(new_buf), Some(old_buf)) = (new_buf, old_buf) {
            let new_buf = keep_unless_skipped(new_buf, old_buf, skip.as_ref());
            update
                .momentum_buffer
                .push(B::float_reshape(new_buf.into_primitive().tensor(), shape));
        }
    }
    update
}
