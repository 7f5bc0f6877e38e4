//! Sync-free Adam and AdamW, as `torch.optim.Adam`/`AdamW` (`torch/optim/adam.py`,
//! `_single_tensor_adam` with `capturable=True`, `amsgrad=False`):
//!
//! ```text
//! step = step + 1
//! g = grad + weight_decay * p                         (Adam, L2; if weight_decay != 0)
//! p = p * (1 - lr * weight_decay)                     (AdamW, decoupled)
//! m = beta1 * m + (1 - beta1) * g
//! v = beta2 * v + (1 - beta2) * g * g
//! p = p - lr / (1 - beta1^step) * m / (sqrt(v) / sqrt(1 - beta2^step) + eps)
//! ```
//!
//! `m` and `v` start at zero; the step counter is an f32 `[1]` tensor per parameter (an entry of
//! its group's `[n]` counters after a multi-tensor step: `step_count`).

use super::SyncFreeOptimizer;
use super::device::{Erased, StepMask, bias_correction, zero_step};
use super::error::{OptimError, check};
use super::mapper::{UpdateRule, step_module};
use super::multi_tensor::{Collected, apply, by_dtype, found_inf_f32, take, zeros_like};
use super::route::{AdamStep, AdamStepFn};
use super::state::{NamedState, OptimizerStateData, StateError, export, import};
use super::step_count::{StepCount, group_counts, split_counts};
use burn::module::{AutodiffModule, ParamId};
use burn::optim::GradientsParams;
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::ops::FloatTensor;
use burn::tensor::{DType, Tensor};
use burnacc_backend::routes::lookup;
use burnacc_kernels::optim::reference::adam_tensor_reference;
use burnacc_kernels::optim::{AdamGroup, AdamHyper};
use std::collections::HashMap;

/// How weight decay enters the update.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WeightDecayMode {
    /// Added to the gradient (L2 penalty): `torch.optim.Adam`.
    L2,
    /// Applied to the parameter, apart from the adaptive step: `torch.optim.AdamW`.
    Decoupled,
}

/// Hyper-parameters of [`Adam`]; [`AdamConfig::adam`] and [`AdamConfig::adamw`] give
/// PyTorch's defaults. The learning rate is given to each step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AdamConfig {
    /// `(beta1, beta2)`, each in `[0, 1)`; default `(0.9, 0.999)`.
    pub betas: (f64, f64),
    /// Added to the denominator, `>= 0`; default `1e-8`.
    pub eps: f64,
    /// Weight decay, `>= 0`; default 0 for Adam, `1e-2` for AdamW.
    pub weight_decay: f64,
    /// L2 (Adam) or decoupled (AdamW).
    pub decay_mode: WeightDecayMode,
}

impl AdamConfig {
    /// `torch.optim.Adam`'s defaults.
    pub fn adam() -> Self {
        Self {
            betas: (0.9, 0.999),
            eps: 1e-8,
            weight_decay: 0.0,
            decay_mode: WeightDecayMode::L2,
        }
    }

    /// `torch.optim.AdamW`'s defaults.
    pub fn adamw() -> Self {
        Self {
            weight_decay: 1e-2,
            decay_mode: WeightDecayMode::Decoupled,
            ..Self::adam()
        }
    }

    /// The hyper-parameters of one step with learning rate `lr`.
    fn hyper(&self, lr: f64) -> AdamHyper {
        AdamHyper {
            lr,
            beta1: self.betas.0,
            beta2: self.betas.1,
            eps: self.eps,
            weight_decay: self.weight_decay,
            decoupled: self.decay_mode == WeightDecayMode::Decoupled,
        }
    }

    fn name(&self) -> &'static str {
        match self.decay_mode {
            WeightDecayMode::L2 => "Adam",
            WeightDecayMode::Decoupled => "AdamW",
        }
    }

    /// `"adam"` or `"adamw"`, as a checkpoint names the state's kind.
    fn kind(&self) -> &'static str {
        match self.decay_mode {
            WeightDecayMode::L2 => "adam",
            WeightDecayMode::Decoupled => "adamw",
        }
    }

    /// Checks PyTorch's ranges; the error names the field.
    pub fn validate(&self) -> Result<(), OptimError> {
        let name = self.name();
        let (b1, b2) = self.betas;
        check((0.0..1.0).contains(&b1), name, "beta1", b1, "in [0, 1)")?;
        check((0.0..1.0).contains(&b2), name, "beta2", b2, "in [0, 1)")?;
        check(
            self.eps >= 0.0 && self.eps.is_finite(),
            name,
            "eps",
            self.eps,
            "finite and >= 0",
        )?;
        check(
            self.weight_decay >= 0.0 && self.weight_decay.is_finite(),
            name,
            "weight_decay",
            self.weight_decay,
            "finite and >= 0",
        )
    }

    /// A validated [`Adam`] with no state yet.
    pub fn init<B: AutodiffBackend>(&self) -> Result<Adam<B>, OptimError> {
        self.validate()?;
        Ok(Adam {
            rule: AdamRule(*self),
            states: HashMap::new(),
        })
    }
}

/// The state of one parameter of rank `D`.
#[derive(Clone, Debug)]
pub struct AdamParamState<B: Backend, const D: usize> {
    /// Steps taken, f32 `[1]`.
    pub step: Tensor<B, 1>,
    /// First moment `m`, the parameter's shape and dtype.
    pub exp_avg: Tensor<B, D>,
    /// Second moment `v`, the parameter's shape and dtype.
    pub exp_avg_sq: Tensor<B, D>,
}

/// Sync-free Adam or AdamW; see the [module docs](self) for the update.
pub struct Adam<B: AutodiffBackend> {
    rule: AdamRule,
    states: HashMap<ParamId, ErasedState<B::InnerBackend>>,
}

impl<B: AutodiffBackend> Adam<B> {
    /// The config.
    pub fn config(&self) -> &AdamConfig {
        &self.rule.0
    }

    /// The state of parameter `id` of rank `D`, if it has taken a step.
    pub fn param_state<const D: usize>(
        &self,
        id: ParamId,
    ) -> Option<AdamParamState<B::InnerBackend, D>> {
        self.states.get(&id).map(|s| AdamParamState {
            step: s.step.tensor(),
            exp_avg: s.exp_avg.get(),
            exp_avg_sq: s.exp_avg_sq.get(),
        })
    }
}

impl<B: AutodiffBackend, M: AutodiffModule<B>> SyncFreeOptimizer<M, B> for Adam<B> {
    fn step(
        &mut self,
        lr: f64,
        module: M,
        grads: GradientsParams,
        found_inf: Option<&Tensor<B::InnerBackend, 1>>,
    ) -> M {
        match lookup::<AdamStep, B::InnerBackend>() {
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
        export(self.rule.0.kind(), &self.states)
    }

    fn load_state(
        &mut self,
        state: OptimizerStateData,
        device: &burn::tensor::Device<B::InnerBackend>,
    ) -> Result<(), StateError> {
        self.states = import(self.rule.0.kind(), state, device)?;
        Ok(())
    }
}

impl<B: AutodiffBackend> Adam<B> {
    /// One multi-tensor step of `group` (one dtype) through `fused`; the new parameters go
    /// into `stepped`. The same update as the per-parameter path: each parameter keeps its own
    /// step counter, whose bias corrections are computed for the whole group at once.
    fn step_group(
        &mut self,
        fused: AdamStepFn<B::InnerBackend>,
        lr: f64,
        group: Vec<Collected<B::InnerBackend>>,
        found_inf: Option<&Tensor<B::InnerBackend, 1>>,
        stepped: &mut HashMap<ParamId, FloatTensor<B::InnerBackend>>,
    ) {
        let Some(first) = group.first() else {
            return;
        };
        let device =
            <B::InnerBackend as burn::tensor::ops::FloatTensorOps<B::InnerBackend>>::float_device(
                &first.param,
            );
        let (beta1, beta2) = self.rule.0.betas;
        let n = group.len();
        let mut ids = Vec::with_capacity(n);
        let mut tensors = AdamGroup {
            params: Vec::with_capacity(n),
            grads: Vec::with_capacity(n),
            exp_avg: Vec::with_capacity(n),
            exp_avg_sq: Vec::with_capacity(n),
            step_size: zeros_like::<B::InnerBackend>(&first.param),
            bc2_sqrt: zeros_like::<B::InnerBackend>(&first.param),
        };
        let mut steps = Vec::with_capacity(n);
        for item in group {
            let (step, m, v) = match self.states.remove(&item.id) {
                Some(s) => (s.step, s.exp_avg.float(), s.exp_avg_sq.float()),
                None => (
                    StepCount::Own(zero_step(&device)),
                    zeros_like::<B::InnerBackend>(&item.param),
                    zeros_like::<B::InnerBackend>(&item.param),
                ),
            };
            ids.push(item.id);
            steps.push(step);
            tensors.exp_avg.push(m);
            tensors.exp_avg_sq.push(v);
            tensors.params.push(item.param);
            tensors.grads.push(item.grad);
        }
        // Step counts after this step, f32 [n], and their bias corrections.
        let steps = group_counts(&steps);
        let next = steps.clone().add_scalar(1.0);
        let step_size = bias_correction(next.clone(), beta1).recip().mul_scalar(lr);
        tensors.step_size = step_size.cast(DType::F32).into_primitive().tensor();
        tensors.bc2_sqrt = bias_correction(next, beta2)
            .sqrt()
            .cast(DType::F32)
            .into_primitive()
            .tensor();
        let update = fused(tensors, self.rule.0.hyper(lr), found_inf_f32(found_inf));
        let advanced = split_counts(StepMask::new(found_inf).advance(steps));
        let new_states = update.exp_avg.into_iter().zip(update.exp_avg_sq);
        for (((id, param), (m, v)), step) in ids
            .into_iter()
            .zip(update.params)
            .zip(new_states)
            .zip(advanced)
        {
            let state = ErasedState {
                step,
                exp_avg: Erased::from_float(m),
                exp_avg_sq: Erased::from_float(v),
            };
            self.states.insert(id, state);
            stepped.insert(id, param);
        }
    }
}

#[derive(Clone, Debug)]
struct ErasedState<B: Backend> {
    step: StepCount<B>,
    exp_avg: Erased<B>,
    exp_avg_sq: Erased<B>,
}

struct AdamRule(AdamConfig);

impl<B: Backend> UpdateRule<B> for AdamRule {
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
        let (beta1, beta2) = c.betas;
        let (step, m, v) = match state {
            Some(s) => (
                s.step.tensor(),
                s.exp_avg.get::<D>(),
                s.exp_avg_sq.get::<D>(),
            ),
            None => (
                zero_step(&param.device()),
                param.zeros_like(),
                param.zeros_like(),
            ),
        };
        // The update is computed as if the step were taken; a skipped step discards it.
        let next = step.clone().add_scalar(1.0);
        // step_size = lr / bc1 and sqrt(bc2): f32 [1] on the device.
        let step_size = bias_correction(next.clone(), beta1).recip().mul_scalar(lr);
        let bc2_sqrt = bias_correction(next, beta2).sqrt();
        let (new_param, new_m, new_v) = adam_tensor_reference(
            param.clone(),
            grad,
            m.clone(),
            v.clone(),
            step_size,
            bc2_sqrt,
            &c.hyper(lr),
        );
        let state = ErasedState {
            step: StepCount::Own(mask.advance(step)),
            exp_avg: Erased::new(mask.keep(new_m, m)),
            exp_avg_sq: Erased::new(mask.keep(new_v, v)),
        };
        (mask.keep(new_param, param), Some(state))
    }
}

impl<B: Backend> NamedState<B> for ErasedState<B> {
    const BUFFERS: &'static [&'static str] = &["exp_avg", "exp_avg_sq"];

    fn step(&self) -> Tensor<B, 1> {
        self.step.tensor()
    }

    fn buffers(&self) -> Vec<&Erased<B>> {
        vec![&self.exp_avg, &self.exp_avg_sq]
    }

    fn from_parts(step: Tensor<B, 1>, buffers: Vec<Erased<B>>) -> Self {
        let mut buffers = buffers.into_iter();
        Self {
            step: StepCount::Own(step),
            exp_avg: buffers.next().expect("checked by import"),
            exp_avg_sq: buffers.next().expect("checked by import"),
        }
    }
}
