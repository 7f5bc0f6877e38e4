//! Autocast: while a guard from [`autocast`] is alive on a thread, `Acc<B>` casts the float
//! inputs of each op it receives on that thread according to the policy of
//! `burnacc_amp::policy` (generated into `forward.rs`):
//!
//! | policy | inputs become | ops |
//! |--------|---------------|-----|
//! | `lower` | the autocast dtype (f16 or bf16) | matmul, linear, convolutions, attention |
//! | `float32` | f32 | sums, means, exp/log/pow, softmax, layer norm, … |
//! | `promote` | the widest input dtype | every other op with several float inputs |
//!
//! Only f32, f16 and bf16 inputs are cast; f64 is left alone, as in PyTorch. Without a guard,
//! `Acc` casts nothing and computes exactly what its inner backend computes.
//!
//! Placed above autodiff (`Acc<Autodiff<B>>`, burnacc's `acc` stacks) the casts are ordinary
//! differentiable `float_cast` ops: gradients flow back through them in the dtype of each
//! original tensor, so f32 parameters get f32 gradients and activations are saved in the dtype
//! the op ran in — PyTorch's autocast semantics.

use burn::tensor::backend::Backend;
use burn::tensor::ops::FloatTensor;
use burn::tensor::{DType, FloatDType, TensorMetadata};
use std::cell::Cell;

thread_local! {
    static AUTOCAST: Cell<Option<FloatDType>> = const { Cell::new(None) };
}

/// Why autocast cannot be switched on.
#[derive(Debug, thiserror::Error)]
pub enum AutocastError {
    /// Autocast runs ops in f16 or bf16 only.
    #[error("autocast dtype {0:?} is not a half-precision type; use f16 or bf16")]
    NotHalf(FloatDType),
}

/// Restores the previous autocast state of its thread when dropped.
#[must_use = "autocast is on only while the guard is alive"]
#[derive(Debug)]
pub struct AutocastGuard {
    previous: Option<FloatDType>,
}

impl Drop for AutocastGuard {
    fn drop(&mut self) {
        AUTOCAST.with(|a| a.set(self.previous));
    }
}

/// Switches autocast on for this thread, in `dtype` (f16 or bf16), until the guard drops.
pub fn autocast(dtype: FloatDType) -> Result<AutocastGuard, AutocastError> {
    if !matches!(dtype, FloatDType::F16 | FloatDType::BF16) {
        return Err(AutocastError::NotHalf(dtype));
    }
    Ok(AutocastGuard {
        previous: AUTOCAST.with(|a| a.replace(Some(dtype))),
    })
}

/// Switches autocast off for this thread until the guard drops (e.g. around a loss that must
/// stay in f32, like PyTorch's `autocast(enabled=False)`).
pub fn no_autocast() -> AutocastGuard {
    AutocastGuard {
        previous: AUTOCAST.with(|a| a.replace(None)),
    }
}

/// The autocast dtype of this thread, if autocast is on.
#[inline]
pub fn autocast_dtype() -> Option<FloatDType> {
    AUTOCAST.with(Cell::get)
}

/// How an op's float inputs are cast (see the module table).
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    Lower,
    Float32,
    Promote,
}

/// Collects the dtypes of an op's float inputs and decides the dtype to run it in.
#[doc(hidden)]
#[derive(Debug)]
pub struct Plan {
    policy: Policy,
    autocast: FloatDType,
    any: bool,
    has_f32: bool,
    has_f16: bool,
    has_bf16: bool,
}

impl Plan {
    /// A plan for an op under `policy` while autocast runs in `autocast`.
    #[inline]
    pub fn new(policy: Policy, autocast: FloatDType) -> Self {
        Self {
            policy,
            autocast,
            any: false,
            has_f32: false,
            has_f16: false,
            has_bf16: false,
        }
    }

    /// Notes one float input's dtype.
    #[inline]
    pub fn see(&mut self, dtype: DType) {
        match dtype {
            DType::F32 => self.has_f32 = true,
            DType::F16 => self.has_f16 = true,
            DType::BF16 => self.has_bf16 = true,
            _ => return,
        }
        self.any = true;
    }

    /// The dtype the castable inputs must have, or `None` when nothing is to be cast.
    #[inline]
    pub fn target(&self) -> Option<FloatDType> {
        if !self.any {
            return None;
        }
        match self.policy {
            Policy::Lower => Some(self.autocast),
            Policy::Float32 => (self.has_f16 || self.has_bf16).then_some(FloatDType::F32),
            Policy::Promote => {
                let kinds = self.has_f32 as u8 + self.has_f16 as u8 + self.has_bf16 as u8;
                match kinds {
                    0 | 1 => None,
                    // f32 with anything, or f16 with bf16: neither half holds the other.
                    _ => Some(FloatDType::F32),
                }
            }
        }
    }
}

/// Casts `tensor` to `target` if it is a castable float (f32, f16, bf16) of another dtype.
#[doc(hidden)]
#[inline]
pub fn cast<B: Backend>(tensor: FloatTensor<B>, target: FloatDType) -> FloatTensor<B> {
    let dtype = tensor.dtype();
    let castable = matches!(dtype, DType::F32 | DType::F16 | DType::BF16);
    if castable && dtype != DType::from(target) {
        crate::counters::bump_kernel("autocast_cast");
        B::float_cast(tensor, target)
    } else {
        tensor
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(policy: Policy, dtypes: &[DType]) -> Option<FloatDType> {
        let mut plan = Plan::new(policy, FloatDType::BF16);
        dtypes.iter().for_each(|d| plan.see(*d));
        plan.target()
    }

    #[test]
    fn lower_casts_every_castable_input_to_the_autocast_dtype() {
        assert_eq!(
            target(Policy::Lower, &[DType::F32, DType::F32]),
            Some(FloatDType::BF16)
        );
        assert_eq!(target(Policy::Lower, &[DType::F16]), Some(FloatDType::BF16));
        assert_eq!(target(Policy::Lower, &[DType::F64]), None);
    }

    #[test]
    fn float32_lifts_halves_only() {
        assert_eq!(
            target(Policy::Float32, &[DType::BF16]),
            Some(FloatDType::F32)
        );
        assert_eq!(target(Policy::Float32, &[DType::F32]), None);
    }

    #[test]
    fn promote_picks_the_widest() {
        assert_eq!(
            target(Policy::Promote, &[DType::BF16, DType::F32]),
            Some(FloatDType::F32)
        );
        assert_eq!(
            target(Policy::Promote, &[DType::BF16, DType::F16]),
            Some(FloatDType::F32)
        );
        assert_eq!(target(Policy::Promote, &[DType::BF16, DType::BF16]), None);
        assert_eq!(target(Policy::Promote, &[DType::F64, DType::F32]), None);
    }

    #[test]
    fn guards_nest_and_restore() {
        assert_eq!(autocast_dtype(), None);
        let outer = autocast(FloatDType::F16).unwrap();
        {
            let _inner = no_autocast();
            assert_eq!(autocast_dtype(), None);
        }
        assert_eq!(autocast_dtype(), Some(FloatDType::F16));
        drop(outer);
        assert_eq!(autocast_dtype(), None);
        assert!(autocast(FloatDType::F32).is_err());
    }
}
