//! Process-wide launch counters of the window-attention softmax, so that callers (and tests)
//! can prove that the fused path ran rather than the reference fallback. Only the CubeCL
//! launchers bump them.
//!
//! They only ever increase: compare a reading taken before a call with one taken after, and,
//! since tests running in parallel share them, assert "increased", never "by exactly n".

use crate::launch_counter::LaunchCounter;

pub(crate) static FORWARD: LaunchCounter = LaunchCounter::new();
pub(crate) static BACKWARD: LaunchCounter = LaunchCounter::new();

/// Number of fused window-softmax forward launches (one per
/// [`super::window_softmax_forward_cube`] call on a non-empty input) since the process started.
pub fn window_softmax_forward_launches() -> u64 {
    FORWARD.get()
}

/// Number of fused window-softmax backward launches (one per
/// [`super::window_softmax_backward_cube`] call on a non-empty input).
pub fn window_softmax_backward_launches() -> u64 {
    BACKWARD.get()
}
