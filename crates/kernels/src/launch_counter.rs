//! [`LaunchCounter`]: a process-wide count of one fused kernel's launches, so that callers (and
//! tests) can prove that the fused path ran rather than a fallback. Only launchers bump them.
//!
//! Counts only ever increase; compare a reading taken before a call with one taken after.
//! Tests running in parallel share them, so assert "increased", never "increased by exactly n".

use std::sync::atomic::{AtomicU64, Ordering};

/// Launches of one fused kernel since the process started.
pub(crate) struct LaunchCounter(AtomicU64);

impl LaunchCounter {
    pub(crate) const fn new() -> Self {
        Self(AtomicU64::new(0))
    }

    /// Counts one launch.
    pub(crate) fn bump(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }

    /// Launches so far.
    pub(crate) fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}
