//! Dynamic loss scaling with the semantics of PyTorch's `torch.amp.GradScaler`
//! (`torch/amp/grad_scaler.py`), kept on the device.
//!
//! One training step, as in DESIGN.md §4:
//!
//! ```text
//! let loss = scaler.scale(loss)?;                       // loss * scale
//! let grads = GradientsParams::from_grads(loss.backward(), &model);
//! let grads = scaler.unscale(&model, grads)?;           // grads / scale, found_inf recorded
//! model = optimizer.step(lr, model, grads, scaler.found_inf().as_ref()); // masked on inf
//! scaler.update()?;                                     // backoff or growth
//! ```
//!
//! The scale (f32 `[1]`), the growth tracker (int `[1]`) and `found_inf` (f32 `[1]`) are tensors
//! of the inner backend: no call above reads anything back from the device. Only
//! [`GradScaler::state`] (for checkpoints) does.

mod config;
mod error;
mod stage;
mod unscale;
mod update;

pub use config::GradScalerConfig;
pub use error::ScalerError;
pub use stage::StepStage;

use burn::module::AutodiffModule;
use burn::optim::GradientsParams;
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::{DType, Int, Tensor};

/// A checkpoint of a [`GradScaler`]: its scale and growth tracker, read back to the host.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GradScalerState {
    /// The current scale (PyTorch's `state_dict()["scale"]`).
    pub scale: f32,
    /// Consecutive finite steps since the last growth or backoff (`"_growth_tracker"`).
    pub growth_tracker: u32,
}

/// Dynamic loss scaler for mixed-precision training, PyTorch's `GradScaler` on Burn.
///
/// Multiplies the loss by `scale` before backward so that small half-precision gradients do
/// not flush to zero, divides the gradients by `scale` before the optimizer step, records
/// whether any gradient overflowed, and adapts `scale` (halved after an overflow, doubled
/// after `growth_interval` clean steps). The optimizers of [`crate::optim`] skip an overflowed
/// step on the device, given [`GradScaler::found_inf`].
///
/// Per-step order, enforced while enabled (see [`StepStage`] for the full table): `scale`
/// (one or more times) → `unscale` (once) → optimizer step → `update` (once). A call out of
/// order returns a [`ScalerError`] and changes nothing.
///
/// `unscale` covers every gradient of the module it is given: with several optimizers over
/// parts of one model, unscale the whole model's gradients once and pass the same
/// `found_inf` to each optimizer.
pub struct GradScaler<B: AutodiffBackend> {
    config: GradScalerConfig,
    device: B::Device,
    /// f32 `[1]`; `1.0` (never used) when disabled.
    scale: Tensor<B::InnerBackend, 1>,
    /// int `[1]`.
    growth_tracker: Tensor<B::InnerBackend, 1, Int>,
    /// f32 `[1]`, set by `unscale`, cleared by `update`.
    found_inf: Option<Tensor<B::InnerBackend, 1>>,
    stage: StepStage,
}

impl<B: AutodiffBackend> GradScaler<B> {
    /// A scaler on `device` with `scale = config.init_scale` and a zero growth tracker.
    pub fn new(config: GradScalerConfig, device: &B::Device) -> Result<Self, ScalerError> {
        config.validate()?;
        let init = if config.enabled {
            config.init_scale
        } else {
            1.0
        };
        Ok(Self {
            config,
            device: device.clone(),
            scale: scale_tensor::<B::InnerBackend>(init, device),
            growth_tracker: Tensor::zeros([1], device),
            found_inf: None,
            stage: StepStage::Ready,
        })
    }

    /// Whether scaling is enabled.
    pub fn is_enabled(&self) -> bool {
        self.config.enabled
    }

    /// The config this scaler was built with.
    pub fn config(&self) -> &GradScalerConfig {
        &self.config
    }

    /// Where the scaler is within the current step.
    pub fn stage(&self) -> StepStage {
        self.stage
    }

    /// loss: any shape, any float dtype → `loss * scale`, same shape and dtype.
    ///
    /// The scale is cast to the loss's dtype (exact for the default powers of two, but note
    /// that f16's largest value is 65504: an f16 loss with the default `init_scale = 65536`
    /// overflows, and the first step backs off, as PyTorch does for f16 outputs that are not
    /// 0-dim). The scale is a constant of the graph: the result is differentiable w.r.t. the
    /// loss only. May be called several times per step. Disabled: returns `loss` unchanged.
    pub fn scale<const D: usize>(
        &mut self,
        loss: Tensor<B, D>,
    ) -> Result<Tensor<B, D>, ScalerError> {
        if !self.config.enabled {
            return Ok(loss);
        }
        self.stage = self.stage.on_scale()?;
        let scale = Tensor::<B, 1>::from_inner(self.scale.clone().cast(loss.dtype()));
        Ok(loss * scale.reshape([1; D]))
    }

    /// Multiplies the gradient of every float parameter of `module` in `grads` by
    /// `inv_scale = 1 / scale`, and records `found_inf` (f32 `[1]`: 1.0 if any of those
    /// gradients had an inf or NaN element, checked before unscaling, as PyTorch does).
    ///
    /// `inv_scale` is computed as in PyTorch, `scale.double().reciprocal().float()`, where the
    /// device supports f64 (`Backend::supports_dtype(device, F64)`), else in f32. Every scale
    /// the default config can reach is a power of two, whose reciprocal is exact in f32, so
    /// the two agree there.
    ///
    /// Each gradient is unscaled in f32 (f64 for f64 parameters) and returned in its
    /// parameter's dtype. Gradients of parameters not in `module` are left as they are.
    /// Errors: [`ScalerError::UnscaleBeforeScale`], [`ScalerError::AlreadyUnscaled`].
    /// Disabled: returns `grads` unchanged and records no `found_inf`.
    pub fn unscale<M: AutodiffModule<B>>(
        &mut self,
        module: &M,
        mut grads: GradientsParams,
    ) -> Result<GradientsParams, ScalerError> {
        if !self.config.enabled {
            return Ok(grads);
        }
        let stage = self.stage.on_unscale()?;
        let found_inf = unscale::Unscaler::<B>::new(&mut grads, self.inv_scale()).run(module);
        self.found_inf = Some(found_inf);
        self.stage = stage;
        Ok(grads)
    }

    /// This step's found-inf flag, f32 `[1]` (1.0: skip the optimizer step), for
    /// [`SyncFreeOptimizer::step`](crate::optim::SyncFreeOptimizer::step). `None` before
    /// `unscale` in a step, and always when disabled.
    pub fn found_inf(&self) -> Option<Tensor<B::InnerBackend, 1>> {
        self.found_inf.clone()
    }

    /// Updates the scale on the device from this step's `found_inf`: overflow → `scale *=
    /// backoff_factor` and the growth tracker restarts; otherwise the tracker counts the step
    /// and, on reaching `growth_interval`, `scale *= growth_factor` (kept only if finite) and
    /// restarts (PyTorch's `_amp_update_scale_`). Ends the step.
    ///
    /// Error: [`ScalerError::UpdateBeforeUnscale`]. Disabled: does nothing.
    pub fn update(&mut self) -> Result<(), ScalerError> {
        if !self.config.enabled {
            return Ok(());
        }
        let stage = self.stage.on_update()?;
        let found_inf = self
            .found_inf
            .take()
            .expect("the Unscaled stage always holds found_inf");
        let (scale, tracker) = update::update_scale(
            self.scale.clone(),
            self.growth_tracker.clone(),
            found_inf,
            &self.config,
        );
        self.scale = scale;
        self.growth_tracker = tracker;
        self.stage = stage;
        Ok(())
    }

    /// The current scale, f32 `[1]`, on the device (1.0 when disabled, as PyTorch's
    /// `get_scale`). Reading it back is the caller's choice, e.g. every `log_every` steps.
    pub fn scale_tensor(&self) -> Tensor<B::InnerBackend, 1> {
        self.scale.clone()
    }

    /// `1 / scale`, f32 `[1]`: through f64 where the device has it (see [`Self::unscale`]).
    fn inv_scale(&self) -> Tensor<B::InnerBackend, 1> {
        if B::InnerBackend::supports_dtype(&self.device, DType::F64) {
            self.scale.clone().cast(DType::F64).recip().cast(DType::F32)
        } else {
            self.scale.clone().recip()
        }
    }

    /// The scale and growth tracker, **read back from the device** (two host reads): for
    /// checkpoints only, never inside a training step.
    pub fn state(&self) -> GradScalerState {
        let scale = self.scale.to_data().iter::<f32>().next();
        let tracker = self.growth_tracker.to_data().iter::<i64>().next();
        GradScalerState {
            scale: scale.expect("the scale has one element"),
            growth_tracker: u32::try_from(tracker.expect("the tracker has one element"))
                .expect("the growth tracker is in [0, growth_interval)"),
        }
    }

    /// Restores a [`GradScalerState`] (uploading it) and starts a new step. Error:
    /// [`ScalerError::InvalidState`] for a scale that is not finite and positive. A disabled
    /// scaler keeps its scale at 1.0.
    pub fn load_state(&mut self, state: GradScalerState) -> Result<(), ScalerError> {
        if !(state.scale.is_finite() && state.scale > 0.0) {
            return Err(ScalerError::InvalidState(state.scale));
        }
        if self.config.enabled {
            self.scale = scale_tensor::<B::InnerBackend>(state.scale, &self.device);
            self.growth_tracker = Tensor::full([1], i64::from(state.growth_tracker), &self.device);
        }
        self.found_inf = None;
        self.stage = StepStage::Ready;
        Ok(())
    }
}

/// An f32 `[1]` tensor holding `value`.
fn scale_tensor<B: Backend>(value: f32, device: &B::Device) -> Tensor<B, 1> {
    Tensor::full([1], value, (device, DType::F32))
}
