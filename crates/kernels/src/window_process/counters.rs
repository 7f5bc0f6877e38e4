//! Process-wide launch counters of the window processing, so that callers (and tests) can
//! prove that the fused path ran rather than the reference fallback. Only the CubeCL launchers
//! bump them.
//!
//! The counters only ever increase; compare a reading taken before a call with one taken after.
//! Tests running in parallel share them, so assert "increased", never "increased by exactly n".

use std::sync::atomic::{AtomicU64, Ordering};

static PROCESS: AtomicU64 = AtomicU64::new(0);
static REVERSE: AtomicU64 = AtomicU64::new(0);

/// Number of fused window-process launches (one per [`super::window_process_cube`] call on a
/// non-empty input) since the process started.
pub fn window_process_launches() -> u64 {
    PROCESS.load(Ordering::Relaxed)
}

/// Number of fused window-process-reverse launches (one per
/// [`super::window_process_reverse_cube`] call on a non-empty input).
pub fn window_process_reverse_launches() -> u64 {
    REVERSE.load(Ordering::Relaxed)
}

pub(crate) fn count_process_launch() {
    PROCESS.fetch_add(1, Ordering::Relaxed);
}

pub(crate) fn count_reverse_launch() {
    REVERSE.fetch_add(1, Ordering::Relaxed);
}
