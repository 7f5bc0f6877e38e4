//! Process-wide launch counter of the multi-axis sum, so that callers (and tests) can prove that
//! it ran. It only ever increases: compare a reading taken before a call with one taken after.

use crate::launch_counter::LaunchCounter;

pub(crate) static LAUNCHES: LaunchCounter = LaunchCounter::new();
pub(crate) static SPLIT_LAUNCHES: LaunchCounter = LaunchCounter::new();

/// Number of multi-axis sums launched (one per [`super::sum_axes_cube`] call with a non-empty
/// output, of one or two kernels) since the process started.
pub fn sum_axes_launches() -> u64 {
    LAUNCHES.get()
}

/// Of those, the sums split over runs of the reduced elements (two kernels).
pub fn sum_axes_split_launches() -> u64 {
    SPLIT_LAUNCHES.get()
}
