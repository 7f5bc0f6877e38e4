//! Process-wide launch counters of the fused batch norm, so that callers (and tests) can prove
//! that the fused path ran rather than a fallback. They only ever increase: compare a reading
//! taken before a call with one taken after.

use crate::launch_counter::LaunchCounter;

pub(crate) static FORWARD_LAUNCHES: LaunchCounter = LaunchCounter::new();
pub(crate) static BACKWARD_LAUNCHES: LaunchCounter = LaunchCounter::new();

/// Fused forwards run (one per [`super::batch_norm_forward_cube`] call with elements to
/// normalise; each is three kernels) since the process started.
pub fn batch_norm_forward_launches() -> u64 {
    FORWARD_LAUNCHES.get()
}

/// Fused backwards run (one per [`super::batch_norm_backward_cube`] call with elements to
/// differentiate; each is three kernels) since the process started.
pub fn batch_norm_backward_launches() -> u64 {
    BACKWARD_LAUNCHES.get()
}
