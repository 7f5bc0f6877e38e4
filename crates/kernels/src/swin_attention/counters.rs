//! Process-wide launch counters of the window-attention softmax, so that callers (and tests)
//! can prove that the fused path ran rather than the reference fallback. Only the CubeCL
//! launchers bump them.
//!
//! The counters only ever increase; compare a reading taken before a call with one taken after.
//! Tests running in parallel share them, so assert "increased", never "increased by exactly n".

use std::sync::atomic::{AtomicU64, Ordering};

static FORWARD: AtomicU64 = AtomicU64::new(0);
static BACKWARD: AtomicU64 = AtomicU64::new(0);

/// Number of fused window-softmax forward launches (one per
/// [`super::window_softmax_forward_cube`] call on a non-empty input) since the process started.
pub fn window_softmax_forward_launches() -> u64 {
    FORWARD.load(Ordering::Relaxed)
}

/// Number of fused window-softmax backward launches (one per
/// [`super::window_softmax_backward_cube`] call on a non-empty input).
pub fn window_softmax_backward_launches() -> u64 {
    BACKWARD.load(Ordering::Relaxed)
}

pub(crate) fn count_forward_launch() {
    FORWARD.fetch_add(1, Ordering::Relaxed);
}

pub(crate) fn count_backward_launch() {
    BACKWARD.fetch_add(1, Ordering::Relaxed);
}
