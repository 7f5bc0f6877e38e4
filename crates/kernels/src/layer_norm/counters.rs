//! Process-wide launch counters of the fused LayerNorm, so that callers (and tests) can prove
//! that the fused path ran rather than a fallback.
//!
//! The counters only ever increase; compare a reading taken before a call with one taken after.
//! Tests running in parallel share them, so assert "increased", never "increased by exactly n".

use std::sync::atomic::{AtomicU64, Ordering};

static FORWARD_LAUNCHES: AtomicU64 = AtomicU64::new(0);
static BACKWARD_LAUNCHES: AtomicU64 = AtomicU64::new(0);

/// Number of fused forward launches (one per [`super::layer_norm_forward_cube`] call that had
/// rows to normalize) since the process started.
pub fn layer_norm_forward_launches() -> u64 {
    FORWARD_LAUNCHES.load(Ordering::Relaxed)
}

/// Number of fused backward launches (one per [`super::layer_norm_backward_cube`] call that had
/// rows to differentiate; each runs the dx kernel and the two dgamma/dbeta kernels).
pub fn layer_norm_backward_launches() -> u64 {
    BACKWARD_LAUNCHES.load(Ordering::Relaxed)
}

pub(crate) fn count_forward_launch() {
    FORWARD_LAUNCHES.fetch_add(1, Ordering::Relaxed);
}

pub(crate) fn count_backward_launch() {
    BACKWARD_LAUNCHES.fetch_add(1, Ordering::Relaxed);
}
