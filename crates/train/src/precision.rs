//! Which float dtypes a stack's device can compute in, checked before any work starts so that
//! `[amp] dtype` never falls back to f32 silently.

use crate::recipe::{AmpDtype, AmpSection, Recipe, RecipeError};
use crate::stack::{BackendStack, Stack, StackDevice, StackTask, with_stack};
use burn::tensor::backend::Backend;
use burn::tensor::{DType, FloatDType};
use burnacc_amp::scaler::GradScalerConfig;
use std::path::Path;

/// `amp.dtype` as Burn's float dtype.
pub fn autocast_float_dtype(dtype: AmpDtype) -> FloatDType {
    match dtype {
        AmpDtype::Bf16 => FloatDType::BF16,
        AmpDtype::F16 => FloatDType::F16,
    }
}

/// The loss scaler `[amp]` describes (disabled unless [`AmpSection::loss_scaling`]).
pub fn scaler_config(amp: &AmpSection) -> GradScalerConfig {
    GradScalerConfig {
        enabled: amp.loss_scaling(),
        init_scale: amp.init_scale,
        growth_factor: amp.growth_factor,
        backoff_factor: amp.backoff_factor,
        growth_interval: amp.growth_interval,
    }
}

/// The float dtypes of interest, widest first.
const FLOAT_DTYPES: [(DType, &str); 4] = [
    (DType::F64, "f64"),
    (DType::F32, "f32"),
    (DType::F16, "f16"),
    (DType::BF16, "bf16"),
];

struct SupportedFloats;

impl StackTask for SupportedFloats {
    type Output = Vec<&'static str>;

    fn run<S: BackendStack>(self, _stack: Stack, device: StackDevice<S>) -> Vec<&'static str> {
        FLOAT_DTYPES
            .iter()
            .filter(|(dtype, _)| S::Backend::supports_dtype(&device, *dtype))
            .map(|(_, name)| *name)
            .collect()
    }
}

/// The float dtypes (`"f64"`, `"f32"`, `"f16"`, `"bf16"`) that `stack`'s device stores and
/// computes with (Burn's `Backend::supports_dtype`).
pub fn supported_float_dtypes(stack: Stack) -> Vec<&'static str> {
    with_stack(stack, SupportedFloats)
}

/// Checks that `stack` supports the recipe's `amp.dtype` when autocast is on; the error
/// names the key, the file, the device and the dtypes it does support.
pub fn check_amp_dtype(recipe: &Recipe, file: &Path, stack: Stack) -> Result<(), RecipeError> {
    let Some(dtype) = recipe.amp.autocast_dtype() else {
        return Ok(());
    };
    let supported = supported_float_dtypes(stack);
    if supported.contains(&dtype.as_str()) {
        return Ok(());
    }
    let hint = match dtype {
        AmpDtype::Bf16 if supported.contains(&"f16") => "; use amp.dtype = \"f16\"",
        AmpDtype::F16 if supported.contains(&"bf16") => "; use amp.dtype = \"bf16\"",
        _ => "",
    };
    Err(RecipeError::Key {
        file: file.to_owned(),
        key: "amp.dtype".into(),
        message: format!(
            "{} is not supported by {stack}: this device supports {}{hint}",
            dtype.as_str(),
            supported.join(", ")
        ),
    })
}
