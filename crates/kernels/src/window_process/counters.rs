//! Process-wide launch counters of the window processing, so that callers (and tests) can
//! prove that the fused path ran rather than the reference fallback. Only the CubeCL launchers
//! bump them.
//!
//! They only ever increase: compare a reading taken before a call with one taken after, and,
//! since tests running in parallel share them, assert "increased", never "by exactly n".

use crate::launch_counter::LaunchCounter;

pub(crate) static PROCESS: LaunchCounter = LaunchCounter::new();
pub(crate) static REVERSE: LaunchCounter = LaunchCounter::new();

/// Number of fused window-process launches (one per [`super::window_process_cube`] call on a
/// non-empty input) since the process started.
pub fn window_process_launches() -> u64 {
    PROCESS.get()
}

/// Number of fused window-process-reverse launches (one per
/// [`super::window_process_reverse_cube`] call on a non-empty input).
pub fn window_process_reverse_launches() -> u64 {
    REVERSE.get()
}
