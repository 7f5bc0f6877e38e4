//! Sync-free SGD with momentum, dampening, Nesterov momentum and L2 weight decay, as
//! `torch.optim.SGD` (`torch/optim/sgd.py`, `_single_tensor_sgd`):
//!
//! ```text
//! g = grad + weight_decay * p                       (if weight_decay != 0)
//! if momentum != 0:
//!     buf = g                                       (first step: torch.clone(g))
//!     buf = momentum * buf + (1 - dampening) * g    (later steps)
//!     g = g + momentum * buf   if nesterov   else   buf
//! p = p - lr * g
//! ```
//!
//! "First step" is decided on the device from a per-parameter step counter (f32 `[1]`), which
//! a skipped step does not advance.

use super::SyncFreeOptimizer;
use super::device::{Erased, StepMask, zero_step};
use super::error::{OptimError, check};
use super::mapper::{UpdateRule, step_module};
use super::multi_tensor::{Collected, apply, by_dtype, found_inf_f32, take, zeros_like};
use super::route::{SgdStep, SgdStepFn};
use super::state::{NamedState, OptimizerStateData, StateError, export, import};
use super::step_count::{StepCount, group_counts, split_counts};
use burn::module::{AutodiffModule, ParamId};
use burn::optim::GradientsParams;
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::ops::FloatTensor;
use burn::tensor::{DType, Tensor};
use burnacc_backend::routes::lookup;
use burnacc_kernels::optim::reference::sgd_tensor_reference;
use burnacc_kernels::optim::{SgdGroup, SgdHyper};
use std::collections::HashMap;

/// Hyper-parameters of [`Sgd`]; defaults as `torch.optim.SGD` (all zero, no Nesterov). The
/// learning rate is given to each step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SgdConfig {
    /// Momentum factor μ (`>= 0`; 0 disables momentum and its state).
    pub momentum: f64,
    /// Dampening of the gradient in the momentum buffer, `(1 - dampening) * g`.
    pub dampening: f64,
    /// L2 penalty added to the gradient, `g + weight_decay * p` (`>= 0`).
    pub weight_decay: f64,
    /// Nesterov momentum; needs `momentum > 0` and `dampening = 0`.
    pub nesterov: bool,
}

impl Default for SgdConfig {
    fn default() -> Self {
        Self {
            momentum: 0.0,
            dampening: 0.0,
            weight_decay: 0.0,
            nesterov: false,
        }
    }
}

impl SgdConfig {
    /// Checks PyTorch's ranges; the error names the field.
    pub fn validate(&self) -> Result<(), OptimError> {
        check(
            self.momentum >= 0.0 && self.momentum.is_finite(),
            "SGD",
            "momentum",
            self.momentum,
            "finite and >= 0",
        )?;
        check(
            self.dampening.is_finite(),
            "SGD",
            "dampening",
            self.dampening,
            "finite",
        )?;
        check(
            self.weight_decay >= 0.0 && self.weight_decay.is_finite(),
            "SGD",
            "weight_decay",
            self.weight_decay,
            "finite and >= 0",
        )?;
        check(
            !self.nesterov || (self.momentum > 0.0 && self.dampening == 0.0),
            "SGD",
            "nesterov",
            format!(
                "true (momentum = {}, dampening = {})",
                self.momentum, self.dampening
            ),
            "momentum > 0 and dampening = 0 (Nesterov momentum requires a momentum and zero dampening)",
        )
    }

    /// The hyper-parameters of one step with learning rate `lr`.
    fn hyper(&self, lr: f64) -> SgdHyper {
        SgdHyper {
            lr,
            momentum: self.momentum,
            dampening: self.dampening,
            weight_decay: self.weight_decay,
            nesterov: self.nesterov,
        }
    }

    /// A validated [`Sgd`] with no state yet.
    pub fn init<B: AutodiffBackend>(&self) -> Result<Sgd<B>, OptimError> {
        self.validate()?;
        Ok(Sgd {
            rule: SgdRule(*self),
            states: HashMap::new(),
        })
    }
}

/// The state of one parameter of rank `D` (only with `momentum != 0`).
#[derive(Clone, Debug)]
pub struct SgdParamState<B: Backend, const D: usize> {
    /// Steps taken, f32 `[1]` (0: the next step initialises the buffer).
    pub step: Tensor<B, 1>,
    /// The momentum buffer, the parameter's shape and dtype.
    pub momentum_buffer: Tensor<B, D>,
}

/// Sync-free SGD; see the [module docs](self) for the update.
pub struct Sgd<B: AutodiffBackend> {
    rule: SgdRule,
    states: HashMap<ParamId, ErasedState<B::InnerBackend>>,
}

impl<B: AutodiffBackend> Sgd<B> {
    /// The config.
    pub fn config(&self) -> &SgdConfig {
        &self.rule.0
    }

    /// The state of parameter `id` of rank `D`, if it has taken a step with momentum.
    pub fn param_state<const D: usize>(
        &self,
        id: ParamId,
    ) -> Option<SgdParamState<B::InnerBackend, D>> {
        self.states.get(&id).map(|s| SgdParamState {
            step: s.step.tensor(),
            momentum_buffer: s.momentum_buffer.get(),
        })
    }
}

impl<B: AutodiffBackend, M: AutodiffModule<B>> SyncFreeOptimizer<M, B> for Sgd<B> {
    fn step(
        &mut self,
        lr: f64,
        module: M,
        grads: GradientsParams,
        found_inf: Option<&Tensor<B::InnerBackend, 1>>,
    ) -> M {
        match lookup::<SgdStep, B::InnerBackend>() {
            Some(fused) => {
                let mut grads = grads;
                let (module, items) = take::<B, M>(module, &mut grads);
                let mut stepped = HashMap::new();
                for group in by_dtype(items) {
                    self.step_group(fused, lr, group, found_inf, &mut stepped);
                }
                apply::<B, M>(module, stepped)
            }
            None => step_module(&self.rule, &mut self.states, lr, module, grads, found_inf),
        }
    }

    fn state(&self) -> Result<OptimizerStateData, StateError> {
        export("sgd", &self.states)
    }

    fn load_state(
        &mut self,
        state: OptimizerStateData,
        device: &burn::tensor::Device<B::InnerBackend>,
    ) -> Result<(), StateError> {
        self.states = import("sgd", state, device)?;
        Ok(())
    }
}

impl<B: AutodiffBackend> Sgd<B> {
    /// One multi-tensor step of `group` (one dtype) through `fused`; the new parameters go
    /// into `stepped`. The same update as the per-parameter path: with momentum, each
    /// parameter keeps its own step counter, which decides its first step on the device.
    fn step_group(
        &mut self,
        fused: SgdStepFn<B::InnerBackend>,
        lr: f64,
        group: Vec<Collected<B::InnerBackend>>,
        found_inf: Option<&Tensor<B::InnerBackend, 1>>,
        stepped: &mut HashMap<ParamId, FloatTensor<B::InnerBackend>>,
    ) {
        let Some(head) = group.first() else {
            return;
        };
        let device =
            <B::InnerBackend as burn::tensor::ops::FloatTensorOps<B::InnerBackend>>::float_device(
                &head.param,
            );
        let momentum = self.rule.0.momentum != 0.0;
        let n = group.len();
        let mut ids = Vec::with_capacity(n);
        let mut steps = Vec::with_capacity(n);
        let mut tensors = SgdGroup {
            params: Vec::with_capacity(n),
            grads: Vec::with_capacity(n),
            momentum_buffer: Vec::new(),
            first: None,
        };
        for item in group {
            if momentum {
                let (step, buf) = match self.states.remove(&item.id) {
                    Some(s) => (s.step, s.momentum_buffer.float()),
                    None => (
                        StepCount::Own(zero_step(&device)),
                        zeros_like::<B::InnerBackend>(&item.param),
                    ),
                };
                steps.push(step);
                tensors.momentum_buffer.push(buf);
            }
            ids.push(item.id);
            tensors.params.push(item.param);
            tensors.grads.push(item.grad);
        }
        let steps = momentum.then(|| group_counts(&steps));
        tensors.first = steps.as_ref().map(|s| {
            s.clone()
                .equal_elem(0.0)
                .float()
                .cast(DType::F32)
                .into_primitive()
                .tensor()
        });
        let update = fused(tensors, self.rule.0.hyper(lr), found_inf_f32(found_inf));
        let mut advanced = steps
            .map(|s| split_counts(StepMask::new(found_inf).advance(s)))
            .unwrap_or_default()
            .into_iter();
        let mut buffers = update.momentum_buffer.into_iter();
        for (id, param) in ids.into_iter().zip(update.params) {
            if let (Some(step), Some(buf)) = (advanced.next(), buffers.next()) {
                let state = ErasedState {
                    step,
                    momentum_buffer: Erased::from_float(buf),
                };
                self.states.insert(id, state);
            }
            stepped.insert(id, param);
        }
    }
}

#[derive(Clone, Debug)]
struct ErasedState<B: Backend> {
    step: StepCount<B>,
    momentum_buffer: Erased<B>,
}

struct SgdRule(SgdConfig);

impl<B: Backend> UpdateRule<B> for SgdRule {
    type State = ErasedState<B>;

    fn update<const D: usize>(
        &self,
        lr: f64,
        param: Tensor<B, D>,
        grad: Tensor<B, D>,
        state: Option<Self::State>,
        mask: &StepMask<B>,
    ) -> (Tensor<B, D>, Option<Self::State>) {
        let c = &self.0;
        if c.momentum == 0.0 {
            let (new_param, _) = sgd_tensor_reference(param.clone(), grad, None, &c.hyper(lr));
            return (mask.keep(new_param, param), None);
        }
        let (step, buf) = match state {
            Some(s) => (s.step.tensor(), s.momentum_buffer.get::<D>()),
            None => (zero_step(&param.device()), param.zeros_like()),
        };
        let first = step.clone().equal_elem(0.0);
        let (new_param, new_buf) = sgd_tensor_reference(
            param.clone(),
            grad,
            Some((buf.clone(), first)),
            &c.hyper(lr),
        );
        let new_buf = new_buf.expect("a momentum step returns its buffer");
        let state = ErasedState {
            step: StepCount::Own(mask.advance(step)),
            momentum_buffer: Erased::new(mask.keep(new_buf, buf)),
        };
        (mask.keep(new_param, param), Some(state))
    }
}

impl<B: Backend> NamedState<B> for ErasedState<B> {
    const BUFFERS: &'static [&'static str] = &["momentum_buffer"];

    fn step(&self) -> Tensor<B, 1> {
        self.step.tensor()
    }

    fn buffers(&self) -> Vec<&Erased<B>> {
        vec![&self.momentum_buffer]
    }

    fn from_parts(step: Tensor<B, 1>, buffers: Vec<Erased<B>>) -> Self {
        let mut buffers = buffers.into_iter();
        Self {
            step: StepCount::Own(step),
            momentum_buffer: buffers.next().expect("checked by import"),
        }
    }
}
