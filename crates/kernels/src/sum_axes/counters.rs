//! Process-wide launch counter of the multi-axis sum, so that callers (and tests) can prove that
//! it ran. It only ever increases: compare a reading taken before a call with one taken after.

use crate::launch_counter::LaunchCounter;

pub(crate) static LAUNCHES: LaunchCounter = LaunchCounter::new();

/// Number of multi-axis sum kernels launched (one per [`super::sum_axes_cube`] call with a
/// non-empty output) since the process started.
pub fn sum_axes_launches() -> u64 {
    LAUNCHES.get()
}
