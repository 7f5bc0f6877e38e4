//! Process-wide launch counters of the NMS kernels, so that callers (and tests) can prove that
//! the device path ran rather than the host's. Only the CubeCL launchers bump them.
//!
//! They only ever increase: compare a reading taken before a call with one taken after, and,
//! since tests running in parallel share them, assert "increased", never "by exactly n".

use crate::launch_counter::LaunchCounter;

pub(crate) static SUPPRESSION_MASK: LaunchCounter = LaunchCounter::new();
pub(crate) static SOFT_NMS: LaunchCounter = LaunchCounter::new();

/// Launches of the IoU suppression-mask kernel (one per [`super::nms`], [`super::nms_normal`]
/// or [`super::batched_nms`] call on a CubeCL device with at least one box).
pub fn suppression_mask_launches() -> u64 {
    SUPPRESSION_MASK.get()
}

/// Launches of the soft-NMS kernel (one per [`super::soft_nms`] or [`super::batched_soft_nms`]
/// call on a CubeCL device with at least one box; one cube per class).
pub fn soft_nms_launches() -> u64 {
    SOFT_NMS.get()
}
