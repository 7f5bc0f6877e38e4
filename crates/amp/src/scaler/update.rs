//! The scale update, on the device.
//!
//! PyTorch: `torch._amp_update_scale_` (`aten/src/ATen/native/cuda/AmpKernels.cu`,
//! `_amp_update_scale_cpu_`), called by `GradScaler.update()`:
//!
//! ```text
//! if found_inf:
//!     scale *= backoff_factor; growth_tracker = 0
//! else:
//!     successful = growth_tracker + 1
//!     if successful == growth_interval:
//!         if isfinite(scale * growth_factor): scale *= growth_factor
//!         growth_tracker = 0
//!     else:
//!         growth_tracker = successful
//! ```
//!
//! The branches become selects (`mask_where`/`mask_fill`), so nothing is read back.

use super::GradScalerConfig;
use burn::tensor::backend::Backend;
use burn::tensor::{Int, Tensor};

/// One update of `(scale, growth_tracker)` given this step's `found_inf`.
///
/// scale: f32 `[1]`; growth_tracker: int `[1]`; found_inf: f32 `[1]` (0 or 1) → the new
/// scale and growth tracker, same shapes and dtypes.
pub(super) fn update_scale<B: Backend>(
    scale: Tensor<B, 1>,
    growth_tracker: Tensor<B, 1, Int>,
    found_inf: Tensor<B, 1>,
    config: &GradScalerConfig,
) -> (Tensor<B, 1>, Tensor<B, 1, Int>) {
    let found = found_inf.greater_elem(0.0);
    let successful = growth_tracker.add_scalar(1);
    let grow = successful
        .clone()
        .equal_elem(i64::from(config.growth_interval));

    let grown = scale.clone().mul_scalar(config.growth_factor);
    let grown = grown
        .clone()
        .mask_where(grown.is_finite().bool_not(), scale.clone());
    let backed_off = scale.clone().mul_scalar(config.backoff_factor);
    let scale = scale
        .mask_where(grow.clone(), grown)
        .mask_where(found.clone(), backed_off);

    let growth_tracker = successful.mask_fill(grow.bool_or(found), 0);
    (scale, growth_tracker)
}
