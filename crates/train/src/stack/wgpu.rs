//! The wgpu stacks (CubeCL on Vulkan, Metal or DX12; Mesa's lavapipe on CPU-only machines).

use super::acc_kernels::install_acc_kernels;
use super::{BackendStack, KernelRoutes, StackDevice, StackError, quietly};
use crate::memory::{MemoryReading, cube_memory};
use crate::recipe::{DeviceSpec, KernelsSection};
use burn::backend::autodiff::checkpoint::strategy::BalancedCheckpointing;
use burn::backend::wgpu::{CubeBackend, WgpuDevice, WgpuRuntime};
use burn::backend::{Autodiff, Wgpu};
use burn::tensor::backend::Backend;
use burnacc_backend::Acc;
use burnacc_fusion::CubeFused;

/// CubeCL on wgpu without fusion: one kernel per op.
type WgpuCube = CubeBackend<WgpuRuntime, f32, i32, u32>;

/// The one wgpu device a stack uses, and whether an adapter answers.
fn check_wgpu() -> Result<(), StackError> {
    quietly(|| WgpuCube::name(&WgpuDevice::default()))
        .map(|_| ())
        .map_err(StackError::WgpuUnavailable)
}

/// `eager` on wgpu: `Autodiff<CubeBackend<WgpuRuntime>>`.
pub struct WgpuEager;

impl BackendStack for WgpuEager {
    type Backend = Autodiff<WgpuCube>;
    const TYPE_NAME: &'static str = "Autodiff<CubeBackend<WgpuRuntime>>";

    fn device(_spec: DeviceSpec) -> StackDevice<Self> {
        WgpuDevice::default()
    }

    fn check_device(_spec: DeviceSpec) -> Result<(), StackError> {
        check_wgpu()
    }

    fn memory(device: &StackDevice<Self>) -> Option<MemoryReading> {
        cube_memory::<WgpuRuntime>(device)
    }
}

/// `fused` on wgpu: `Autodiff<Fusion<CubeBackend<WgpuRuntime>>>`, Burn's fusion.
pub struct WgpuFused;

impl BackendStack for WgpuFused {
    type Backend = Autodiff<Wgpu>;
    const TYPE_NAME: &'static str = "Autodiff<Fusion<CubeBackend<WgpuRuntime>>>";

    fn device(_spec: DeviceSpec) -> StackDevice<Self> {
        WgpuDevice::default()
    }

    fn check_device(_spec: DeviceSpec) -> Result<(), StackError> {
        check_wgpu()
    }

    fn memory(device: &StackDevice<Self>) -> Option<MemoryReading> {
        cube_memory::<WgpuRuntime>(device)
    }
}

/// `acc` on wgpu: `Acc<Autodiff<Fusion<CubeAcc<WgpuRuntime>>, BalancedCheckpointing>>`:
/// CubeCL under burnacc's fusion runtime (`burnacc_fusion::CubeAccRuntime`: Burn's CubeCL
/// fusers and burnacc's).
pub struct WgpuAcc;

impl BackendStack for WgpuAcc {
    type Backend = Acc<Autodiff<CubeFused<WgpuRuntime>, BalancedCheckpointing>>;
    const TYPE_NAME: &'static str =
        "Acc<Autodiff<Fusion<CubeAcc<WgpuRuntime>>, BalancedCheckpointing>>";

    fn device(_spec: DeviceSpec) -> StackDevice<Self> {
        WgpuDevice::default()
    }

    fn check_device(_spec: DeviceSpec) -> Result<(), StackError> {
        check_wgpu()
    }

    fn memory(device: &StackDevice<Self>) -> Option<MemoryReading> {
        cube_memory::<WgpuRuntime>(device)
    }

    fn install_kernels(kernels: &KernelsSection) -> Result<KernelRoutes, &'static str> {
        Ok(install_acc_kernels::<
            Autodiff<CubeFused<WgpuRuntime>, BalancedCheckpointing>,
            CubeFused<WgpuRuntime>,
        >(kernels))
    }
}
