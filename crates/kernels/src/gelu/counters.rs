//! Process-wide launch counters of the fused GELUs, so that callers (and tests) can prove that
//! the fused path ran rather than the reference fallback. Only the CubeCL launchers bump them.
//!
//! The counters only ever increase; compare a reading taken before a call with one taken after.
//! Tests running in parallel share them, so assert "increased", never "increased by exactly n".

use std::sync::atomic::{AtomicU64, Ordering};

static QUICK_GELU_FORWARD: AtomicU64 = AtomicU64::new(0);
static QUICK_GELU_BACKWARD: AtomicU64 = AtomicU64::new(0);
static BIAS_GELU_FORWARD: AtomicU64 = AtomicU64::new(0);
static BIAS_GELU_BACKWARD: AtomicU64 = AtomicU64::new(0);

/// Number of fused QuickGELU forward launches (one per [`super::quick_gelu_forward_cube`] call
/// on a non-empty input) since the process started.
pub fn quick_gelu_forward_launches() -> u64 {
    QUICK_GELU_FORWARD.load(Ordering::Relaxed)
}

/// Number of fused QuickGELU backward launches (one per [`super::quick_gelu_backward_cube`]
/// call on a non-empty input).
pub fn quick_gelu_backward_launches() -> u64 {
    QUICK_GELU_BACKWARD.load(Ordering::Relaxed)
}

/// Number of fused bias + GELU forward launches (one per [`super::bias_gelu_forward_cube`] call
/// on a non-empty input, with or without bias).
pub fn bias_gelu_forward_launches() -> u64 {
    BIAS_GELU_FORWARD.load(Ordering::Relaxed)
}

/// Number of fused bias + GELU backward launches (one per [`super::bias_gelu_backward_cube`]
/// call on a non-empty input; with a bias each runs the dx + partial-sum kernel and the final
/// column-sum kernel).
pub fn bias_gelu_backward_launches() -> u64 {
    BIAS_GELU_BACKWARD.load(Ordering::Relaxed)
}

pub(crate) fn count_quick_gelu_forward_launch() {
    QUICK_GELU_FORWARD.fetch_add(1, Ordering::Relaxed);
}

pub(crate) fn count_quick_gelu_backward_launch() {
    QUICK_GELU_BACKWARD.fetch_add(1, Ordering::Relaxed);
}

pub(crate) fn count_bias_gelu_forward_launch() {
    BIAS_GELU_FORWARD.fetch_add(1, Ordering::Relaxed);
}

pub(crate) fn count_bias_gelu_backward_launch() {
    BIAS_GELU_BACKWARD.fetch_add(1, Ordering::Relaxed);
}
