//! The CUDA stacks (cubecl-cuda through NVRTC; built with `--features cuda`).

use super::acc_kernels::install_acc_kernels;
use super::{BackendStack, KernelRoutes, StackDevice, StackError, quietly};
use crate::memory::{MemoryReading, cube_memory};
use crate::recipe::{DeviceSpec, KernelsSection};
use burn::backend::autodiff::checkpoint::strategy::BalancedCheckpointing;
use burn::backend::cuda::CudaDevice;
use burn::backend::wgpu::CubeBackend;
use burn::backend::{Autodiff, Cuda};
use burn::cubecl::cuda::CudaRuntime;
use burn::tensor::backend::{Backend, DeviceOps};
use burnacc_backend::Acc;
use burnacc_fusion::CubeFused;

/// CubeCL on CUDA without fusion: one kernel per op.
type CudaCube = CubeBackend<CudaRuntime, f32, i32, u8>;

/// CUDA devices that answer (0 when the driver or `libcuda.so` does not load).
pub(super) fn device_count() -> usize {
    quietly(|| {
        let device = CudaDevice::default();
        CudaCube::device_count(device.id().type_id)
    })
    .unwrap_or(0)
}

fn index(spec: DeviceSpec) -> usize {
    match spec {
        DeviceSpec::Cuda(index) => index,
        other => unreachable!("a CUDA stack on device {other}"),
    }
}

fn check_cuda(spec: DeviceSpec) -> Result<(), StackError> {
    let count = device_count();
    if index(spec) < count {
        Ok(())
    } else {
        Err(StackError::CudaUnavailable {
            device: spec,
            reason: format!("{count} CUDA device(s) visible (driver and libcuda.so must load)"),
        })
    }
}

/// `eager` on CUDA: `Autodiff<CubeBackend<CudaRuntime>>`.
pub struct CudaEager;

impl BackendStack for CudaEager {
    type Backend = Autodiff<CudaCube>;
    const TYPE_NAME: &'static str = "Autodiff<CubeBackend<CudaRuntime>>";

    fn device(spec: DeviceSpec) -> StackDevice<Self> {
        CudaDevice::new(index(spec))
    }

    fn check_device(spec: DeviceSpec) -> Result<(), StackError> {
        check_cuda(spec)
    }

    fn memory(device: &StackDevice<Self>) -> Option<MemoryReading> {
        cube_memory::<CudaRuntime>(device)
    }
}

/// `fused` on CUDA: `Autodiff<Fusion<CubeBackend<CudaRuntime>>>`, Burn's fusion.
pub struct CudaFused;

impl BackendStack for CudaFused {
    type Backend = Autodiff<Cuda>;
    const TYPE_NAME: &'static str = "Autodiff<Fusion<CubeBackend<CudaRuntime>>>";

    fn device(spec: DeviceSpec) -> StackDevice<Self> {
        CudaDevice::new(index(spec))
    }

    fn check_device(spec: DeviceSpec) -> Result<(), StackError> {
        check_cuda(spec)
    }

    fn memory(device: &StackDevice<Self>) -> Option<MemoryReading> {
        cube_memory::<CudaRuntime>(device)
    }
}

/// `acc` on CUDA: `Acc<Autodiff<Fusion<CubeAcc<CudaRuntime>>, BalancedCheckpointing>>`:
/// CubeCL under burnacc's fusion runtime, as on wgpu.
pub struct CudaAcc;

impl BackendStack for CudaAcc {
    type Backend = Acc<Autodiff<CubeFused<CudaRuntime>, BalancedCheckpointing>>;
    const TYPE_NAME: &'static str =
        "Acc<Autodiff<Fusion<CubeAcc<CudaRuntime>>, BalancedCheckpointing>>";

    fn device(spec: DeviceSpec) -> StackDevice<Self> {
        CudaDevice::new(index(spec))
    }

    fn check_device(spec: DeviceSpec) -> Result<(), StackError> {
        check_cuda(spec)
    }

    fn memory(device: &StackDevice<Self>) -> Option<MemoryReading> {
        cube_memory::<CudaRuntime>(device)
    }

    fn install_kernels(kernels: &KernelsSection) -> Result<KernelRoutes, &'static str> {
        Ok(install_acc_kernels::<
            Autodiff<CubeFused<CudaRuntime>, BalancedCheckpointing>,
            CubeFused<CudaRuntime>,
        >(kernels))
    }
}
