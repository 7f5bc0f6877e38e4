//! Applies a per-parameter update rule to every float parameter of a module.
//!
//! The same walk as Burn 0.21's `OptimizerAdaptor` (`burn-optim/src/optim/simple/adaptor.rs`):
//! a `ModuleMapper` takes each parameter's gradient out of `GradientsParams`, updates the
//! parameter on the inner backend, and restores `require_grad`. Parameters without a gradient
//! are left alone, state included (PyTorch skips parameters whose `.grad` is `None`).
//!
//! A parameter shared by several submodules (tied weights: one `Param`, one id) is visited
//! once per use. It steps once, at its first use, and every later use receives that updated
//! value, so the uses stay tied (Burn's adaptor leaves the later uses at the old value).

use super::device::StepMask;
use burn::module::{AutodiffModule, ModuleMapper, Param, ParamId};
use burn::optim::GradientsParams;
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::{Tensor, TensorPrimitive};
use std::collections::HashMap;

/// One optimizer's update of one parameter.
pub(crate) trait UpdateRule<B: Backend> {
    /// The per-parameter state (dimension-erased).
    type State;

    /// param, grad: same shape, the parameter's dtype → the new parameter and state. `state`
    /// is `None` on the parameter's first step. Every output must go through `mask.keep` (or
    /// `mask.advance`), so that a skipped step returns `param` and `state` unchanged.
    fn update<const D: usize>(
        &self,
        lr: f64,
        param: Tensor<B, D>,
        grad: Tensor<B, D>,
        state: Option<Self::State>,
        mask: &StepMask<B>,
    ) -> (Tensor<B, D>, Option<Self::State>);
}

/// One optimizer step of `rule` over `module`.
pub(crate) fn step_module<B, M, R>(
    rule: &R,
    states: &mut HashMap<ParamId, R::State>,
    lr: f64,
    module: M,
    mut grads: GradientsParams,
    found_inf: Option<&Tensor<B::InnerBackend, 1>>,
) -> M
where
    B: AutodiffBackend,
    M: AutodiffModule<B>,
    R: UpdateRule<B::InnerBackend>,
{
    let mask = StepMask::new(found_inf);
    module.map(&mut StepMapper::<B, R> {
        rule,
        states,
        grads: &mut grads,
        lr,
        mask: &mask,
        stepped: HashMap::new(),
    })
}

struct StepMapper<'a, B: AutodiffBackend, R: UpdateRule<B::InnerBackend>> {
    rule: &'a R,
    states: &'a mut HashMap<ParamId, R::State>,
    grads: &'a mut GradientsParams,
    lr: f64,
    mask: &'a StepMask<B::InnerBackend>,
    /// The updated value of each parameter stepped so far in this step, for its later uses.
    stepped: HashMap<ParamId, TensorPrimitive<B>>,
}

impl<B: AutodiffBackend, R: UpdateRule<B::InnerBackend>> ModuleMapper<B> for StepMapper<'_, B, R> {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<B, D>>) -> Param<Tensor<B, D>> {
        let (id, tensor, mapper) = param.consume();
        // Removing the gradient makes a parameter shared by several submodules step once; its
        // later uses take the value of the first.
        let Some(grad) = self.grads.remove::<B::InnerBackend, D>(id) else {
            let tensor = match self.stepped.get(&id) {
                Some(stepped) => Tensor::from_primitive(stepped.clone()),
                None => tensor,
            };
            return Param::from_mapped_value(id, tensor, mapper);
        };
        let require_grad = tensor.is_require_grad();
        let param = tensor.inner();
        // Master weights keep their dtype (f32); a gradient in another dtype is cast to it.
        let grad = grad.cast(param.dtype());
        let state = self.states.remove(&id);
        let (param, state) = self.rule.update(self.lr, param, grad, state, self.mask);
        if let Some(state) = state {
            self.states.insert(id, state);
        }
        let mut tensor = Tensor::from_inner(param);
        if require_grad {
            tensor = tensor.require_grad();
        }
        self.stepped.insert(id, tensor.clone().into_primitive());
        Param::from_mapped_value(id, tensor, mapper)
    }
}
