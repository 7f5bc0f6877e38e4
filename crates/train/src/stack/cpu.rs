//! The CPU stacks, on Flex.

use super::acc_kernels::install_acc_kernels;
use super::{BackendStack, KernelRoutes, StackDevice};
use crate::memory::{MemoryReading, host_memory};
use crate::recipe::{DeviceSpec, KernelsSection};
use burn::backend::autodiff::checkpoint::strategy::BalancedCheckpointing;
use burn::backend::flex::FlexDevice;
use burn::backend::{Autodiff, Flex};
use burnacc_backend::Acc;
use burnacc_fusion::CpuFlex;
use burnacc_fusion::cpu::host_memory::reuse_freed_memory;

/// `eager` on the CPU: `Autodiff<Flex>`, plain Burn.
pub struct CpuEager;

impl BackendStack for CpuEager {
    type Backend = Autodiff<Flex>;
    const TYPE_NAME: &'static str = "Autodiff<Flex>";

    fn device(_spec: DeviceSpec) -> StackDevice<Self> {
        FlexDevice
    }

    fn memory(_device: &StackDevice<Self>) -> Option<MemoryReading> {
        Some(host_memory())
    }
}

/// `acc` on the CPU: `Acc<Autodiff<CpuFlex, BalancedCheckpointing>>`, burnacc's CPU backend.
///
/// Not under Burn's fusion (`Fusion<CpuFlex>`, which `burnacc-fusion` provides): even with
/// burnacc's element-wise fuser, a step under the fusion stream took 1.3× (BERT-base) to 3.1×
/// (Swin-T) as long on this 2-core CPU. Each op crosses a channel to the fusion server's
/// thread, and `Fusion` decomposes GELU and `linear` before CpuFlex sees them
/// (docs/benchmarks.md).
pub struct CpuAcc;

impl BackendStack for CpuAcc {
    type Backend = Acc<Autodiff<CpuFlex, BalancedCheckpointing>>;
    const TYPE_NAME: &'static str = "Acc<Autodiff<CpuFlex, BalancedCheckpointing>>";

    /// Also makes the process's allocator keep freed buffers for the next step
    /// ([`reuse_freed_memory`]).
    fn device(_spec: DeviceSpec) -> StackDevice<Self> {
        reuse_freed_memory();
        FlexDevice
    }

    fn memory(_device: &StackDevice<Self>) -> Option<MemoryReading> {
        Some(host_memory())
    }

    fn install_kernels(kernels: &KernelsSection) -> Result<KernelRoutes, &'static str> {
        Ok(install_acc_kernels::<
            Autodiff<CpuFlex, BalancedCheckpointing>,
            CpuFlex,
        >(kernels))
    }
}
