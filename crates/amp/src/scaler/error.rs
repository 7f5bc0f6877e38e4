//! [`ScalerError`]: misuse of a [`GradScaler`](super::GradScaler), worded as PyTorch words it.

use thiserror::Error;

/// What can go wrong with a [`GradScaler`](super::GradScaler).
///
/// The step-order errors are those `torch/amp/grad_scaler.py` raises (`RuntimeError`s of
/// `unscale_`, `update` and `_check_scale_growth_tracker`); see the state machine in
/// [`GradScaler`](super::GradScaler).
#[derive(Clone, Debug, Error, PartialEq)]
pub enum ScalerError {
    /// A config field is out of range.
    #[error("invalid GradScaler config: {field} = {value}, expected {expected}")]
    InvalidConfig {
        /// The field's name, e.g. `"backoff_factor"`.
        field: &'static str,
        /// The rejected value, as written.
        value: String,
        /// The valid range.
        expected: &'static str,
    },
    /// `unscale` called a second time in one step.
    #[error(
        "unscale() has already been called since the last update(): gradients are unscaled \
         once per step"
    )]
    AlreadyUnscaled,
    /// `unscale` called in a step where no loss was scaled: the gradients it would unscale
    /// were not produced by a scaled backward pass of this step.
    #[error(
        "unscale() called before scale() in this step (step before backward): scale the loss \
         and run backward() on it first"
    )]
    UnscaleBeforeScale,
    /// `update` called in a step whose gradients were never unscaled, so no inf/NaN check
    /// was recorded.
    #[error(
        "update() called before unscale() in this step: no inf checks were recorded prior to \
         update(); call unscale() (and the optimizer step) first"
    )]
    UpdateBeforeUnscale,
    /// `scale` called after `unscale` in the same step: gradients of that loss would reach
    /// the optimizer still scaled.
    #[error(
        "scale() called after unscale() in this step: gradients of this loss would not be \
         unscaled; call update() to start the next step first"
    )]
    ScaleAfterUnscale,
    /// `load_state` got a scale that is not finite and positive.
    #[error("invalid GradScaler state: scale = {0}, expected finite and > 0")]
    InvalidState(f32),
}
