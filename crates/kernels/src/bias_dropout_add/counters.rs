//! Process-wide launch counters of the fused bias + dropout + residual add, so that callers
//! (and tests) can prove that the fused path ran rather than a fallback. Only the CubeCL
//! launchers bump them.
//!
//! The counters only ever increase; compare a reading taken before a call with one taken after.
//! Tests running in parallel share them, so assert "increased", never "increased by exactly n".

use std::sync::atomic::{AtomicU64, Ordering};

static FORWARD_LAUNCHES: AtomicU64 = AtomicU64::new(0);
static BACKWARD_LAUNCHES: AtomicU64 = AtomicU64::new(0);

/// Number of fused forward launches (one per [`super::bias_dropout_add_forward_cube`] call
/// with elements to compute) since the process started.
pub fn bias_dropout_add_forward_launches() -> u64 {
    FORWARD_LAUNCHES.load(Ordering::Relaxed)
}

/// Number of fused backward launches (one per [`super::bias_dropout_add_backward_cube`] call
/// that ran a kernel: the dx kernel, or the dx + dbias column pass and its final sum). A call
/// without bias at `p = 0` returns the upstream gradient unchanged and launches nothing.
pub fn bias_dropout_add_backward_launches() -> u64 {
    BACKWARD_LAUNCHES.load(Ordering::Relaxed)
}

pub(crate) fn count_forward_launch() {
    FORWARD_LAUNCHES.fetch_add(1, Ordering::Relaxed);
}

pub(crate) fn count_backward_launch() {
    BACKWARD_LAUNCHES.fetch_add(1, Ordering::Relaxed);
}
