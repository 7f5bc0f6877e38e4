//! [`OptimError`]: invalid optimizer hyper-parameters.

use thiserror::Error;

/// An optimizer config value out of range, with PyTorch's ranges (the `ValueError`s of
/// `torch/optim/{sgd,adam,adamw}.py`).
#[derive(Clone, Debug, Error, PartialEq)]
pub enum OptimError {
    /// A config field is out of range.
    #[error("invalid {optimizer} config: {field} = {value}, expected {expected}")]
    InvalidConfig {
        /// `"SGD"`, `"Adam"` or `"AdamW"`.
        optimizer: &'static str,
        /// The field's name, e.g. `"beta2"`.
        field: &'static str,
        /// The rejected value, as written.
        value: String,
        /// The valid range.
        expected: &'static str,
    },
}

/// `Err(InvalidConfig)` unless `ok`.
pub(crate) fn check(
    ok: bool,
    optimizer: &'static str,
    field: &'static str,
    value: impl ToString,
    expected: &'static str,
) -> Result<(), OptimError> {
    if ok {
        Ok(())
    } else {
        Err(OptimError::InvalidConfig {
            optimizer,
            field,
            value: value.to_string(),
            expected,
        })
    }
}
