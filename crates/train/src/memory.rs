//! Memory readings for the JSONL log and the run summary.
//!
//! CPU stacks allocate through Rust's global allocator, so a counting allocator
//! ([`CountingAllocator`], installed by this crate) gives the exact current and peak heap bytes.
//! CubeCL stacks allocate device memory from CubeCL's pools; the client reports bytes in use and
//! bytes reserved by the pools (reserved ≥ the peak in use, since pools only grow between
//! cleanups), read only at logging steps.

use crate::stack::Stack;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};

/// The system allocator, counting live and peak bytes.
pub struct CountingAllocator;

static LIVE: AtomicU64 = AtomicU64::new(0);
static PEAK: AtomicU64 = AtomicU64::new(0);

// SAFETY: every call is forwarded unchanged to `System`; the counters only observe sizes.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: same contract as the caller's.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            grew(layout.size() as u64);
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: same contract as the caller's.
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if !ptr.is_null() {
            grew(layout.size() as u64);
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size() as u64, Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: same contract as the caller's.
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            let old = layout.size() as u64;
            let new_size = new_size as u64;
            if new_size >= old {
                grew(new_size - old);
            } else {
                LIVE.fetch_sub(old - new_size, Ordering::Relaxed);
            }
        }
        new
    }
}

fn grew(bytes: u64) {
    let live = LIVE.fetch_add(bytes, Ordering::Relaxed) + bytes;
    PEAK.fetch_max(live, Ordering::Relaxed);
}

/// Host heap bytes live now and at the peak since the last [`reset_host_peak`].
pub fn host_heap() -> (u64, u64) {
    (LIVE.load(Ordering::Relaxed), PEAK.load(Ordering::Relaxed))
}

/// Starts a new peak measurement from the bytes live now.
pub fn reset_host_peak() {
    PEAK.store(LIVE.load(Ordering::Relaxed), Ordering::Relaxed);
}

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
