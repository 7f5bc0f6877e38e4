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
//! `m` and `v` start at zero; the step counter is an f32 `[1]` tensor per parameter.

use super::SyncFreeOptimizer;
use super::device::{Erased, StepMask, bias_correction, broadcast, zero_step};
use super::error::{OptimError, check};
use super::mapper::{UpdateRule, step_module};
use burn::module::{AutodiffModule, ParamId};
use burn::optim::GradientsParams;
use burn::tensor::Tensor;
use burn::tensor::backend::{AutodiffBackend, Backend};
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

    fn name(&self) -> &'static str {
        match self.decay_mode {
            WeightDecayMode::L2 => "Adam",
            WeightDecayMode::Decoupled => "AdamW",
        }
    }

    /// Checks PyTorch's ranges; the error names the field.
    pub fn validate(&self) -> Result<(), OptimError> {
        let name = self.name();
        let (b1, b2) = self.betas;
        check((0.0..1.0).contains(&b1), name, "beta1", b1, "in [0, 1)")?;
        check((0.0..1.0).contains(&b2), name, "beta2", b2, "in [0, 1)")?;
        check(self.eps >= 0.0 && self.eps.is_finite(), name, "eps", self.eps, "finite and >= 0")?;
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
    pub fn param_state<const D: usize>(&self, id: ParamId) -> Option<AdamParamState<B::InnerBackend, D>> {
        self.states.get(&id).map(|s| AdamParamState {
            step: s.step.clone(),
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
        step_module(&self.rule, &mut self.states, lr, module, grads, found_inf)
    }
}

#[derive(Clone, Debug)]
struct ErasedState<B: Backend> {
    step: Tensor<B, 1>,
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
            Some(s) => (s.step, s.exp_avg.get::<D>(), s.exp_avg_sq.get::<D>()),
            None => (zero_step(&param.device()), param.zeros_like(), param.zeros_like()),
        };
        // The update is computed as if the step were taken; a skipped step discards it.
        let next = step.clone().add_scalar(1.0);
        let (grad, decayed) = match c.decay_mode {
            _ if c.weight_decay == 0.0 => (grad, param.clone()),
            WeightDecayMode::L2 => (grad + param.clone().mul_scalar(c.weight_decay), param.clone()),
            WeightDecayMode::Decoupled => (grad, param.clone().mul_scalar(1.0 - lr * c.weight_decay)),
        };
        let new_m = m.clone().mul_scalar(beta1) + grad.clone().mul_scalar(1.0 - beta1);
        let new_v = v.clone().mul_scalar(beta2) + (grad.clone() * grad).mul_scalar(1.0 - beta2);
        let dtype = param.dtype();
        // step_size = lr / bc1 and sqrt(bc2): f32 [1] on the device, broadcast over the tensor.
        let step_size = broadcast::<B, D>(bias_correction(next.clone(), beta1).recip().mul_scalar(lr), dtype);
        let bc2_sqrt = broadcast::<B, D>(bias_correction(next, beta2).sqrt(), dtype);
        let denom = (new_v.clone().sqrt() / bc2_sqrt).add_scalar(c.eps);
        let new_param = decayed - new_m.clone() * step_size / denom;
        let state = ErasedState {
            step: mask.advance(step),
            exp_avg: Erased::new(mask.keep(new_m, m)),
            exp_avg_sq: Erased::new(mask.keep(new_v, v)),
        };
        (mask.keep(new_param, param), Some(state))
    }
}
