//! Memory readings for the JSONL log and the run summary.
//!
//! CPU stacks allocate through Rust's global allocator, so a counting allocator
//! ([`burnacc_checkpoint::heap::CountingAllocator`], installed by the binaries) gives the exact
//! current and peak heap bytes.
//! CubeCL stacks allocate device memory from CubeCL's pools; the client reports bytes in use and
//! bytes reserved by the pools (reserved ≥ the peak in use, since pools only grow between
//! cleanups), read only at logging steps.

use crate::stack::Stack;
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
    use burn::backend::wgpu::{WgpuDevice, WgpuRuntime};
    use burn::cubecl::Runtime;
    let usage = match stack {
        Stack::CpuEager | Stack::CpuAcc => {
            let (in_use, peak) = host_heap();
            return Some(MemoryReading { in_use, peak });
        }
        Stack::WgpuEager | Stack::WgpuFused | Stack::WgpuAcc => {
            WgpuRuntime::client(&WgpuDevice::default())
                .memory_usage()
                .ok()?
        }
        #[cfg(feature = "cuda")]
        Stack::CudaEager(i) | Stack::CudaFused(i) | Stack::CudaAcc(i) => {
            burn::cubecl::cuda::CudaRuntime::client(&burn::backend::cuda::CudaDevice::new(i))
                .memory_usage()
                .ok()?
        }
        #[cfg(not(feature = "cuda"))]
        Stack::CudaEager(_) | Stack::CudaFused(_) | Stack::CudaAcc(_) => return None,
    };
    Some(MemoryReading {
        in_use: usage.bytes_in_use,
        peak: usage.bytes_reserved,
    })
}
