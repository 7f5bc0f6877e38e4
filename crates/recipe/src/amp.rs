//! `[amp]`: mixed precision (autocast, loss scaling), PyTorch AMP as TorchAcc offers it.
//!
//! ```toml
//! [amp]
//! enabled = true        # or level = "O1" (TorchAcc's --amp_level; "O0" is off)
//! dtype = "bf16"        # "bf16" or "f16"
//! grad_scaler = true    # default: on for f16, off for bf16
//! init_scale = 65536.0  # GradScaler hyper-parameters, PyTorch's defaults
//! growth_factor = 2.0
//! backoff_factor = 0.5
//! growth_interval = 2000
//! ```

use serde::{Deserialize, Serialize};

/// The half-precision type autocast computes in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AmpDtype {
    /// bfloat16: f32's range, 8 bits of mantissa; needs no loss scaling.
    Bf16,
    /// IEEE half: 5-bit exponent (max 65504); needs loss scaling.
    F16,
}

impl AmpDtype {
    /// The recipe's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            AmpDtype::Bf16 => "bf16",
            AmpDtype::F16 => "f16",
        }
    }
}

/// TorchAcc's `--amp_level`: O0 is f32, O1 is autocast.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum AmpLevel {
    /// No mixed precision.
    O0,
    /// Autocast with PyTorch's op lists (and loss scaling for f16).
    O1,
}

/// `[amp]`
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AmpSection {
    /// Autocast the forward pass and the loss (mode acc only).
    pub enabled: Option<bool>,
    /// `"O0"` or `"O1"`: the same switch under TorchAcc's name.
    pub level: Option<AmpLevel>,
    /// bf16 or f16.
    pub dtype: AmpDtype,
    /// Dynamic loss scaling; default: on for f16, off for bf16.
    pub grad_scaler: Option<bool>,
    /// The scale of the first step.
    pub init_scale: f32,
    /// Scale growth after `growth_interval` steps without overflow.
    pub growth_factor: f32,
    /// Scale factor after a step with inf/NaN gradients.
    pub backoff_factor: f32,
    /// Steps without overflow before the scale grows.
    pub growth_interval: u32,
}

impl Default for AmpSection {
    /// Off; bf16 when on; PyTorch's `torch.amp.GradScaler` defaults (`init_scale` 2^16,
    /// `growth_factor` 2, `backoff_factor` 0.5, `growth_interval` 2000).
    fn default() -> Self {
        Self {
            enabled: None,
            level: None,
            dtype: AmpDtype::Bf16,
            grad_scaler: None,
            init_scale: 65536.0,
            growth_factor: 2.0,
            backoff_factor: 0.5,
            growth_interval: 2000,
        }
    }
}

impl AmpSection {
    /// Whether autocast is on (`enabled`, else `level = "O1"`, else off).
    pub fn is_enabled(&self) -> bool {
        self.enabled.unwrap_or(self.level == Some(AmpLevel::O1))
    }

    /// The autocast dtype, when autocast is on.
    pub fn autocast_dtype(&self) -> Option<AmpDtype> {
        self.is_enabled().then_some(self.dtype)
    }

    /// Whether dynamic loss scaling is on: with autocast in f16 unless `grad_scaler` says
    /// otherwise; never without autocast.
    pub fn loss_scaling(&self) -> bool {
        self.is_enabled() && self.grad_scaler.unwrap_or(self.dtype == AmpDtype::F16)
    }

    /// Checks the section; returns the first bad key and why.
    pub(super) fn validate(&self, mode_is_acc: bool) -> Result<(), (&'static str, String)> {
        if let (Some(enabled), Some(level)) = (self.enabled, self.level)
            && enabled != (level == AmpLevel::O1)
        {
            return Err((
                "amp.level",
                format!("{level:?} contradicts amp.enabled = {enabled}; set one of the two"),
            ));
        }
        if self.is_enabled() && !mode_is_acc {
            return Err((
                "amp.enabled",
                "autocast is applied by the acc backend: set backend.mode = \"acc\"".into(),
            ));
        }
        if self.grad_scaler == Some(true) && !self.is_enabled() {
            return Err((
                "amp.grad_scaler",
                "loss scaling needs autocast: set amp.enabled = true".into(),
            ));
        }
        self.check_scaler()
    }

    /// The loss scaler's hyper-parameters, by `torch.amp.GradScaler`'s rules (checked even with
    /// scaling off: switching it on later must not reveal a bad value).
    fn check_scaler(&self) -> Result<(), (&'static str, String)> {
        let bad = |key: &'static str, expected: &str, value: String| {
            Err((key, format!("must be {expected} (got {value})")))
        };
        if !(self.init_scale.is_finite() && self.init_scale > 0.0) {
            return bad(
                "amp.init_scale",
                "finite and > 0",
                self.init_scale.to_string(),
            );
        }
        // `!(x > 1)` also rejects NaN.
        if !(self.growth_factor.is_finite() && self.growth_factor > 1.0) {
            return bad(
                "amp.growth_factor",
                "finite and > 1",
                self.growth_factor.to_string(),
            );
        }
        if !(self.backoff_factor > 0.0 && self.backoff_factor < 1.0) {
            return bad(
                "amp.backoff_factor",
                "in (0, 1)",
                self.backoff_factor.to_string(),
            );
        }
        if self.growth_interval == 0 {
            return bad("amp.growth_interval", ">= 1", "0".into());
        }
        Ok(())
    }
}
