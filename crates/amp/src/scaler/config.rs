//! [`GradScalerConfig`]: the hyper-parameters of dynamic loss scaling, with PyTorch's defaults.

use super::ScalerError;

/// Hyper-parameters of a [`GradScaler`](super::GradScaler); the defaults are those of
/// `torch.amp.GradScaler` (`torch/amp/grad_scaler.py`).
///
/// The defaults are powers of two, so scaling, unscaling and every scale update are exact in
/// f32: a scaled step computes the same gradients as an unscaled one, unless they overflow.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GradScalerConfig {
    /// When `false`, the scaler does nothing: `scale` and `unscale` return their input and
    /// `update` is a no-op (PyTorch's `enabled=False`).
    pub enabled: bool,
    /// The scale of the first step (`init_scale`, default `2^16`).
    pub init_scale: f32,
    /// Factor applied to the scale after `growth_interval` consecutive steps without inf/NaN
    /// gradients (default `2.0`).
    pub growth_factor: f32,
    /// Factor applied to the scale after a step with inf/NaN gradients (default `0.5`).
    pub backoff_factor: f32,
    /// Number of consecutive finite steps after which the scale grows (default `2000`).
    pub growth_interval: u32,
}

impl Default for GradScalerConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            init_scale: 65536.0,
            growth_factor: 2.0,
            backoff_factor: 0.5,
            growth_interval: 2000,
        }
    }
}

impl GradScalerConfig {
    /// The default config, disabled.
    pub fn disabled() -> Self {
        Self {
            enabled: false,
            ..Self::default()
        }
    }

    /// Checks every field: `init_scale` finite and `> 0`, `growth_factor > 1`,
    /// `0 < backoff_factor < 1`, `growth_interval >= 1`. The error names the first bad field.
    /// A disabled config is checked too: enabling it later must not reveal a bad value.
    pub fn validate(&self) -> Result<(), ScalerError> {
        let invalid = |field: &'static str, value: String, expected: &'static str| {
            Err(ScalerError::InvalidConfig {
                field,
                value,
                expected,
            })
        };
        if !(self.init_scale.is_finite() && self.init_scale > 0.0) {
            return invalid("init_scale", self.init_scale.to_string(), "finite and > 0");
        }
        // `!(x > 1)` also rejects NaN.
        if !(self.growth_factor.is_finite() && self.growth_factor > 1.0) {
            return invalid(
                "growth_factor",
                self.growth_factor.to_string(),
                "finite and > 1",
            );
        }
        if !(self.backoff_factor > 0.0 && self.backoff_factor < 1.0) {
            return invalid(
                "backoff_factor",
                self.backoff_factor.to_string(),
                "in (0, 1)",
            );
        }
        if self.growth_interval == 0 {
            return invalid("growth_interval", "0".into(), ">= 1");
        }
        Ok(())
    }
}
