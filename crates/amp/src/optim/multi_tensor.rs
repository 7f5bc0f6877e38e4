//! The multi-tensor path of the sync-free optimizers: every parameter with a gradient is
//! taken out of the module first, each dtype group is updated by one routed multi-tensor step
//! ([`super::route`]), and the new values are put back into the module.
//!
//! Parameters without a gradient are left alone, state included, and a parameter shared by
//! several submodules (one id) steps once and every use receives the new value, as in the
//! per-parameter path (`super::mapper`).

use burn::module::{AutodiffModule, ModuleMapper, Param, ParamId};
use burn::optim::GradientsParams;
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::ops::FloatTensor;
use burn::tensor::{DType, Tensor, TensorMetadata, TensorPrimitive};
use std::collections::{HashMap, HashSet};

/// One parameter to step: its value and gradient on the inner backend, in its dtype.
pub(crate) struct Collected<B: Backend> {
    pub(crate) id: ParamId,
    pub(crate) param: FloatTensor<B>,
    pub(crate) grad: FloatTensor<B>,
}

/// Every parameter of `module` that has a gradient in `grads` (each id once, at its first
/// use), with the gradient cast to the parameter's dtype; the gradients are taken out of
/// `grads`.
///
/// The parameters are taken out of the module, which holds an empty placeholder (same rank,
/// same `require_grad`) in their place until [`apply`] puts the new values back: a step that
/// updates a buffer in place (the CPU's fused steps do) then finds it unshared, instead of
/// copying every parameter because the module still refers to it.
pub(crate) fn take<B: AutodiffBackend, M: AutodiffModule<B>>(
    module: M,
    grads: &mut GradientsParams,
) -> (M, Vec<Collected<B::InnerBackend>>) {
    let mut taker = Taker::<B> {
        grads,
        seen: HashSet::new(),
        items: Vec::new(),
    };
    let module = module.map(&mut taker);
    (module, taker.items)
}

struct Taker<'a, B: AutodiffBackend> {
    grads: &'a mut GradientsParams,
    seen: HashSet<ParamId>,
    items: Vec<Collected<B::InnerBackend>>,
}

impl<B: AutodiffBackend> ModuleMapper<B> for Taker<'_, B> {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<B, D>>) -> Param<Tensor<B, D>> {
        let (id, tensor, mapper) = param.consume();
        if !self.seen.insert(id) {
            return Param::from_mapped_value(id, tensor, mapper);
        }
        let Some(grad) = self.grads.remove::<B::InnerBackend, D>(id) else {
            return Param::from_mapped_value(id, tensor, mapper);
        };
        let require_grad = tensor.is_require_grad();
        let device = tensor.device();
        let value = tensor.inner();
        // Master weights keep their dtype (f32); a gradient in another dtype is cast to it.
        let grad = grad.cast(value.dtype());
        self.items.push(Collected {
            id,
            param: value.into_primitive().tensor(),
            grad: grad.into_primitive().tensor(),
        });
        let mut placeholder = Tensor::<B, D>::empty([0; D], &device);
        if require_grad {
            placeholder = placeholder.require_grad();
        }
        Param::from_mapped_value(id, placeholder, mapper)
    }
}

/// `items` split into groups of one dtype (a multi-tensor step takes one dtype), in order.
pub(crate) fn by_dtype<B: Backend>(items: Vec<Collected<B>>) -> Vec<Vec<Collected<B>>> {
    let mut groups: Vec<(DType, Vec<Collected<B>>)> = Vec::new();
    for item in items {
        let dtype = item.param.dtype();
        match groups.iter_mut().find(|(d, _)| *d == dtype) {
            Some((_, group)) => group.push(item),
            None => groups.push((dtype, vec![item])),
        }
    }
    groups.into_iter().map(|(_, group)| group).collect()
}

/// A zero tensor shaped and typed like `like` (a new moment or momentum buffer).
pub(crate) fn zeros_like<B: Backend>(like: &FloatTensor<B>) -> FloatTensor<B> {
    B::float_zeros(like.shape(), &B::float_device(like), like.dtype().into())
}

/// `module` with the parameters in `stepped` replaced by their new values (`require_grad`
/// restored); every use of a shared parameter receives the new value.
pub(crate) fn apply<B: AutodiffBackend, M: AutodiffModule<B>>(
    module: M,
    stepped: HashMap<ParamId, FloatTensor<B::InnerBackend>>,
) -> M {
    module.map(&mut Apply::<B> { stepped })
}

struct Apply<B: AutodiffBackend> {
    stepped: HashMap<ParamId, FloatTensor<B::InnerBackend>>,
}

impl<B: AutodiffBackend> ModuleMapper<B> for Apply<B> {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<B, D>>) -> Param<Tensor<B, D>> {
        let (id, tensor, mapper) = param.consume();
        let Some(new) = self.stepped.get(&id) else {
            return Param::from_mapped_value(id, tensor, mapper);
        };
        let require_grad = tensor.is_require_grad();
        let inner =
            Tensor::<B::InnerBackend, D>::from_primitive(TensorPrimitive::Float(new.clone()));
        let mut tensor = Tensor::from_inner(inner);
        if require_grad {
            tensor = tensor.require_grad();
        }
        Param::from_mapped_value(id, tensor, mapper)
    }
}

/// `found_inf` as the fused steps take it: f32 `[1]`.
pub(crate) fn found_inf_f32<B: Backend>(
    found_inf: Option<&Tensor<B, 1>>,
) -> Option<FloatTensor<B>> {
    found_inf.map(|f| f.clone().cast(DType::F32).into_primitive().tensor())
}
