//! Memory readings for the JSONL log and the run summary.
//!
//! CPU stacks allocate through Rust's global allocator, so a counting allocator
//! ([`burnacc_checkpoint::heap::CountingAllocator`], installed by the binaries) gives the exact
//! current and peak heap bytes.
//! CubeCL stacks allocate device memory from CubeCL's pools; the client reports bytes in use and
//! bytes reserved by the pools (reserved ≥ the peak in use, since pools only grow between
//! cleanups), read only at logging steps.

use crate::stack::{BackendStack, Stack, StackDevice, StackTask, with_stack};
use burnacc_checkpoint::heap::host_heap;

/// One memory reading of the stack's device.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct MemoryReading {
    /// Bytes in use now.
    pub in_use: u64,
    /// Peak bytes: exact for the CPU (allocator), pool reservation for CubeCL devices.
    pub peak: u64,
}

/// Reads the memory of `stack`'s device (blocking on the device queue for CubeCL stacks).
pub fn read_memory(stack: Stack) -> Option<MemoryReading> {
    with_stack(stack, ReadMemory)
}

struct ReadMemory;

impl StackTask for ReadMemory {
    type Output = Option<MemoryReading>;
    fn run<S: BackendStack>(self, _stack: Stack, device: StackDevice<S>) -> Self::Output {
        S::memory(&device)
    }
}

/// The host heap, from the counting allocator (zeros when the binary did not install it).
pub fn host_memory() -> MemoryReading {
    let (in_use, peak) = host_heap();
    MemoryReading { in_use, peak }
}

/// The memory of a CubeCL device: bytes in use and reserved by its pools.
pub fn cube_memory<R: burn::cubecl::Runtime>(device: &R::Device) -> Option<MemoryReading> {
    let usage = R::client(device).memory_usage().ok()?;
    Some(MemoryReading {
        in_use: usage.bytes_in_use,
        peak: usage.bytes_reserved,
    })
}
