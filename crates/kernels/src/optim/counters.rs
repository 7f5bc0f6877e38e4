//! Process-wide launch counters of the multi-tensor optimizer kernels, so that callers (and
//! tests) can prove that the fused path ran rather than the reference.
//!
//! The counters only ever increase; compare a reading taken before a step with one taken
//! after. Tests running in parallel share them, so assert "increased", never "by exactly n".

use crate::launch_counter::LaunchCounter;

pub(crate) static ADAM_LAUNCHES: LaunchCounter = LaunchCounter::new();
pub(crate) static SGD_LAUNCHES: LaunchCounter = LaunchCounter::new();
pub(crate) static BUFFER_COPIES: LaunchCounter = LaunchCounter::new();

/// Fused Adam/AdamW launches since the process started: one per CubeCL kernel launch (a chunk
/// of tensors), one per group on the CPU's fused loop.
pub fn multi_tensor_adam_launches() -> u64 {
    ADAM_LAUNCHES.get()
}

/// Fused SGD launches since the process started, counted as [`multi_tensor_adam_launches`].
pub fn multi_tensor_sgd_launches() -> u64 {
    SGD_LAUNCHES.get()
}

/// Parameters and state buffers the CPU's fused loops had to copy before writing them,
/// because another tensor shared their buffer (or it was a strided view): a caller that hands
/// over the only reference gets its buffers updated in place, and this stays put.
pub fn multi_tensor_buffer_copies() -> u64 {
    BUFFER_COPIES.get()
}
