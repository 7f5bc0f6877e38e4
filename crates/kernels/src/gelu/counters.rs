//! Process-wide launch counters of the fused GELUs, so that callers (and tests) can prove that
//! the fused path ran rather than the reference fallback. Only the CubeCL launchers bump them.
//!
//! They only ever increase: compare a reading taken before a call with one taken after, and,
//! since tests running in parallel share them, assert "increased", never "by exactly n".

use crate::launch_counter::LaunchCounter;

pub(crate) static QUICK_GELU_FORWARD: LaunchCounter = LaunchCounter::new();
pub(crate) static QUICK_GELU_BACKWARD: LaunchCounter = LaunchCounter::new();
pub(crate) static BIAS_GELU_FORWARD: LaunchCounter = LaunchCounter::new();
pub(crate) static BIAS_GELU_BACKWARD: LaunchCounter = LaunchCounter::new();

/// Number of fused QuickGELU forward launches (one per [`super::quick_gelu_forward_cube`] call
/// on a non-empty input) since the process started.
pub fn quick_gelu_forward_launches() -> u64 {
    QUICK_GELU_FORWARD.get()
}

/// Number of fused QuickGELU backward launches (one per [`super::quick_gelu_backward_cube`]
/// call on a non-empty input).
pub fn quick_gelu_backward_launches() -> u64 {
    QUICK_GELU_BACKWARD.get()
}

/// Number of fused bias + GELU forward launches (one per [`super::bias_gelu_forward_cube`] call
/// on a non-empty input, with or without bias).
pub fn bias_gelu_forward_launches() -> u64 {
    BIAS_GELU_FORWARD.get()
}

/// Number of fused bias + GELU backward launches (one per [`super::bias_gelu_backward_cube`]
/// call on a non-empty input; with a bias each runs the dx + partial-sum kernel and the final
/// column-sum kernel).
pub fn bias_gelu_backward_launches() -> u64 {
    BIAS_GELU_BACKWARD.get()
}
