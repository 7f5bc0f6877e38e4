//! Launch counter of burnacc's deformable-convolution backward, so that callers (and tests) can
//! prove that it ran rather than Burn's. Only the CubeCL launcher bumps it.
//!
//! It only ever increases: compare a reading taken before a call with one taken after, and,
//! since tests running in parallel share it, assert "increased", never "by exactly n".

use crate::launch_counter::LaunchCounter;

pub(crate) static BACKWARD: LaunchCounter = LaunchCounter::new();

/// Launches of the backward kernel (one per backward pass of [`super::deform_conv2d`] on a
/// CubeCL device with a non-empty output).
pub fn backward_launches() -> u64 {
    BACKWARD.get()
}
