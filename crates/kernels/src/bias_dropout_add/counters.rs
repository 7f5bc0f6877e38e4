//! Process-wide launch counters of the fused bias + dropout + residual add, so that callers
//! (and tests) can prove that the fused path ran rather than a fallback. Only the CubeCL
//! launchers bump them.
//!
//! They only ever increase: compare a reading taken before a call with one taken after, and,
//! since tests running in parallel share them, assert "increased", never "by exactly n".

use crate::launch_counter::LaunchCounter;

pub(crate) static FORWARD_LAUNCHES: LaunchCounter = LaunchCounter::new();
pub(crate) static BACKWARD_LAUNCHES: LaunchCounter = LaunchCounter::new();

/// Number of fused forward launches (one per [`super::bias_dropout_add_forward_cube`] call
/// with elements to compute) since the process started.
pub fn bias_dropout_add_forward_launches() -> u64 {
    FORWARD_LAUNCHES.get()
}

/// Number of fused backward launches (one per [`super::bias_dropout_add_backward_cube`] call
/// that ran a kernel: the dx kernel, or the dx + dbias column pass and its final sum). A call
/// without bias at `p = 0` returns the upstream gradient unchanged and launches nothing.
pub fn bias_dropout_add_backward_launches() -> u64 {
    BACKWARD_LAUNCHES.get()
}
