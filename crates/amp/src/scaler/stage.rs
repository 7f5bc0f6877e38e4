//! The per-step state machine of a [`GradScaler`](super::GradScaler).
//!
//! PyTorch keeps one stage per optimizer (`OptState.READY → UNSCALED → STEPPED`, reset by
//! `update()`) and checks, in `torch/amp/grad_scaler.py`:
//! - `unscale_` twice: "unscale_() has already been called on this optimizer since the last
//!   update()";
//! - `unscale_`/`step`/`update` with no scale ever created by `scale()`: "Attempted unscale_
//!   but _scale is None. This may indicate your script did not use scaler.scale(loss or
//!   outputs) earlier in the iteration.";
//! - `update` with no inf check recorded: "No inf checks were recorded prior to update.".
//!
//! Here the optimizer step takes the found-inf flag directly, so one stage per scaler covers
//! the step, and `scale()` is required in every step rather than once (the scale tensor exists
//! from `new`):
//!
//! | stage      | `scale`             | `unscale`              | `update`                 |
//! |------------|---------------------|------------------------|--------------------------|
//! | `Ready`    | → `Scaled`          | `UnscaleBeforeScale`   | `UpdateBeforeUnscale`    |
//! | `Scaled`   | → `Scaled` (losses) | → `Unscaled`           | `UpdateBeforeUnscale`    |
//! | `Unscaled` | `ScaleAfterUnscale` | `AlreadyUnscaled`      | → `Ready`                |
//!
//! `scale` may be called several times per step (several losses, or gradient accumulation
//! over micro-batches, as PyTorch allows); `unscale` exactly once, after the last backward
//! pass; `update` once, after the optimizer step. A failed call leaves the stage and the
//! scaler's tensors unchanged. A disabled scaler checks nothing, as in PyTorch.

use super::ScalerError;

/// Where a [`GradScaler`](super::GradScaler) is within the current step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StepStage {
    /// Start of a step: after `new`, `load_state` or `update`.
    Ready,
    /// At least one loss of this step was scaled.
    Scaled,
    /// The gradients of this step were unscaled and checked; found-inf is available.
    Unscaled,
}

impl StepStage {
    /// The stage after a `scale` call.
    pub(crate) fn on_scale(self) -> Result<Self, ScalerError> {
        match self {
            Self::Ready | Self::Scaled => Ok(Self::Scaled),
            Self::Unscaled => Err(ScalerError::ScaleAfterUnscale),
        }
    }

    /// The stage after an `unscale` call.
    pub(crate) fn on_unscale(self) -> Result<Self, ScalerError> {
        match self {
            Self::Scaled => Ok(Self::Unscaled),
            Self::Ready => Err(ScalerError::UnscaleBeforeScale),
            Self::Unscaled => Err(ScalerError::AlreadyUnscaled),
        }
    }

    /// The stage after an `update` call.
    pub(crate) fn on_update(self) -> Result<Self, ScalerError> {
        match self {
            Self::Unscaled => Ok(Self::Ready),
            Self::Ready | Self::Scaled => Err(ScalerError::UpdateBeforeUnscale),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::StepStage::*;
    use super::*;

    #[test]
    fn transitions_follow_the_table() {
        assert_eq!(Ready.on_scale(), Ok(Scaled));
        assert_eq!(Scaled.on_scale(), Ok(Scaled));
        assert_eq!(Unscaled.on_scale(), Err(ScalerError::ScaleAfterUnscale));
        assert_eq!(Ready.on_unscale(), Err(ScalerError::UnscaleBeforeScale));
        assert_eq!(Scaled.on_unscale(), Ok(Unscaled));
        assert_eq!(Unscaled.on_unscale(), Err(ScalerError::AlreadyUnscaled));
        assert_eq!(Ready.on_update(), Err(ScalerError::UpdateBeforeUnscale));
        assert_eq!(Scaled.on_update(), Err(ScalerError::UpdateBeforeUnscale));
        assert_eq!(Unscaled.on_update(), Ok(Ready));
    }
}
