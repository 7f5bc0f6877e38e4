//! Freed tensor buffers kept for reuse by the process's allocator.
//!
//! A training step on the CPU allocates and frees buffers of a few MiB hundreds of times
//! (activations, gradients, copies). glibc's `malloc` serves blocks above its mmap threshold
//! (128 KiB, rising to at most 32 MiB as such blocks are freed) with fresh `mmap`s and returns
//! freed memory at the top of its heaps to the kernel (trim), so each step faults the same
//! amount of fresh, zeroed pages back in: on Swin-T at 224 px, batch 4, page faults and page
//! clearing were a quarter of the step (docs/benchmarks.md). Raising the mmap threshold to its
//! maximum, disabling trimming and growing the heaps in large steps keeps freed blocks in the
//! heap, where the next step's buffers of the same sizes find them.
//!
//! The cost: the process keeps its high-water mark of heap memory resident instead of
//! returning it between steps (the live bytes, which `bench` and `train` report, are the same).

use std::sync::Once;

/// glibc's largest mmap threshold on 64-bit targets (`DEFAULT_MMAP_THRESHOLD_MAX`).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const MMAP_THRESHOLD_MAX: i32 = 32 << 20;

/// Extra space a heap grows by whenever it must grow: fewer, larger extensions while a step's
/// working set builds up (address space; pages become resident only when written).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const TOP_PAD: i32 = 256 << 20;

/// Makes the process's allocator keep freed blocks for reuse (once per process). A no-op
/// where the allocator is not glibc's.
pub fn reuse_freed_memory() {
    static ONCE: Once = Once::new();
    ONCE.call_once(set_allocator_options);
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
fn set_allocator_options() {
    // SAFETY: `mallopt` only changes allocator parameters; glibc takes its arena lock, so it
    // may be called while other threads allocate.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD_MAX);
        libc::mallopt(libc::M_TRIM_THRESHOLD, i32::MAX);
        libc::mallopt(libc::M_TOP_PAD, TOP_PAD);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn set_allocator_options() {}
