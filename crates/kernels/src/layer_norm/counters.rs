//! Process-wide launch counters of the fused LayerNorm, so that callers (and tests) can prove
//! that the fused path ran rather than a fallback.
//!
//! They only ever increase: compare a reading taken before a call with one taken after, and,
//! since tests running in parallel share them, assert "increased", never "by exactly n".

use crate::launch_counter::LaunchCounter;

pub(crate) static FORWARD_LAUNCHES: LaunchCounter = LaunchCounter::new();
pub(crate) static BACKWARD_LAUNCHES: LaunchCounter = LaunchCounter::new();

/// Number of fused forward launches (one per [`super::layer_norm_forward_cube`] call that had
/// rows to normalize) since the process started.
pub fn layer_norm_forward_launches() -> u64 {
    FORWARD_LAUNCHES.get()
}

/// Number of fused backward launches (one per [`super::layer_norm_backward_cube`] call that had
/// rows to differentiate; each runs the dx kernel and the two dgamma/dbeta kernels).
pub fn layer_norm_backward_launches() -> u64 {
    BACKWARD_LAUNCHES.get()
}
