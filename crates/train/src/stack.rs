//! Mode × device → the backend stack of DESIGN.md §2, resolved before any work starts.
//!
//! | mode  | cpu                             | wgpu / cuda                                        |
//! |-------|---------------------------------|----------------------------------------------------|
//! | eager | `Autodiff<Flex>`                | `Autodiff<CubeBackend<R>>`                         |
//! | fused | — (Flex has no fusion)          | `Autodiff<Fusion<CubeBackend<R>>>`                 |
//! | acc   | `Acc<Autodiff<Flex, Balanced>>` | `Acc<Autodiff<Fusion<CubeBackend<R>>, Balanced>>`  |
//!
//! `Acc` sits above autodiff: it sees the ops the model calls (`layer_norm`, `softmax`,
//! `linear`, `conv2d`, … before autodiff decomposes any of them), its autocast casts are
//! ordinary differentiable ops (f32 parameters get f32 gradients, activations are saved in the
//! dtype their op ran in, as in PyTorch), and the optimizer runs on `Acc<inner>`. The
//! measurement behind this choice is in docs/amp.md.
//!
//! `acc` stacks run Burn's autodiff with `BalancedCheckpointing` (`Balanced`, the `Ckpt` of
//! DESIGN.md §2): the outputs of cheap element-wise ops are recomputed during backward instead
//! of being kept, and matmul/conv outputs are kept. Burn's `nn::BatchNorm` is built from
//! element-wise ops, each of which otherwise saves a full-size activation: on ResNet-50
//! (batch 8, 224 px, Flex) this halves the activation memory, 1.85 GB → 0.92 GB per step, with
//! bit-identical results.
//!
//! The CPU's inner backend is Flex rather than NdArray: Flex is Burn's fast pure-Rust CPU
//! backend (SIMD, multi-threaded gemm, zero-copy views) and stores f16/bf16, which autocast
//! needs; NdArray stays the independent f64 reference of the conformance tests.

use crate::recipe::{DeviceSpec, Mode};
use burn::backend::autodiff::checkpoint::strategy::BalancedCheckpointing;
use burn::backend::flex::FlexDevice;
use burn::backend::wgpu::{CubeBackend, WgpuDevice, WgpuRuntime};
use burn::backend::{Autodiff, Flex, Wgpu};
use burnacc_backend::Acc;
use burnacc_checkpoint::CheckpointBackend;
use std::fmt;

/// One runnable backend stack.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stack {
    /// `Autodiff<Flex>`
    CpuEager,
    /// `Acc<Autodiff<Flex, BalancedCheckpointing>>`
    CpuAcc,
    /// `Autodiff<CubeBackend<WgpuRuntime>>`
    WgpuEager,
    /// `Autodiff<Fusion<CubeBackend<WgpuRuntime>>>`
    WgpuFused,
    /// `Acc<Autodiff<Fusion<CubeBackend<WgpuRuntime>>, BalancedCheckpointing>>`
    WgpuAcc,
    /// `Autodiff<CubeBackend<CudaRuntime>>` on device N.
    CudaEager(usize),
    /// `Autodiff<Fusion<CubeBackend<CudaRuntime>>>` on device N.
    CudaFused(usize),
    /// `Acc<Autodiff<Fusion<CubeBackend<CudaRuntime>>, BalancedCheckpointing>>` on device N.
    CudaAcc(usize),
}

impl Stack {
    /// The mode this stack runs.
    pub fn mode(self) -> Mode {
        match self {
            Stack::CpuEager | Stack::WgpuEager | Stack::CudaEager(_) => Mode::Eager,
            Stack::WgpuFused | Stack::CudaFused(_) => Mode::Fused,
            Stack::CpuAcc | Stack::WgpuAcc | Stack::CudaAcc(_) => Mode::Acc,
        }
    }

    /// The concrete device, as a recipe would name it.
    pub fn device(self) -> DeviceSpec {
        match self {
            Stack::CpuEager | Stack::CpuAcc => DeviceSpec::Cpu,
            Stack::WgpuEager | Stack::WgpuFused | Stack::WgpuAcc => DeviceSpec::Wgpu,
            Stack::CudaEager(i) | Stack::CudaFused(i) | Stack::CudaAcc(i) => DeviceSpec::Cuda(i),
        }
    }

    /// The Burn type of the stack, for logs.
    pub fn type_name(self) -> &'static str {
        match self {
            Stack::CpuEager => "Autodiff<Flex>",
            Stack::CpuAcc => "Acc<Autodiff<Flex, BalancedCheckpointing>>",
            Stack::WgpuEager => "Autodiff<CubeBackend<WgpuRuntime>>",
            Stack::WgpuFused => "Autodiff<Fusion<CubeBackend<WgpuRuntime>>>",
            Stack::WgpuAcc => {
                "Acc<Autodiff<Fusion<CubeBackend<WgpuRuntime>>, BalancedCheckpointing>>"
            }
            Stack::CudaEager(_) => "Autodiff<CubeBackend<CudaRuntime>>",
            Stack::CudaFused(_) => "Autodiff<Fusion<CubeBackend<CudaRuntime>>>",
            Stack::CudaAcc(_) => {
                "Acc<Autodiff<Fusion<CubeBackend<CudaRuntime>>, BalancedCheckpointing>>"
            }
        }
    }
}

impl Stack {
    /// This stack on CUDA device `index`; a CPU or wgpu stack (one device each) unchanged.
    pub fn on_cuda_index(self, index: usize) -> Stack {
        match self {
            Stack::CudaEager(_) => Stack::CudaEager(index),
            Stack::CudaFused(_) => Stack::CudaFused(index),
            Stack::CudaAcc(_) => Stack::CudaAcc(index),
            other => other,
        }
    }

    /// Whether `self` and `other` run the same backend type (on possibly different devices).
    pub fn same_backend(self, other: Stack) -> bool {
        self.on_cuda_index(0) == other.on_cuda_index(0)
    }
}

impl fmt::Display for Stack {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "mode {} on {} ({})",
            self.mode(),
            self.device(),
            self.type_name()
        )
    }
}

/// Why a mode/device pair cannot run here.
#[derive(Debug, thiserror::Error)]
pub enum StackError {
    /// `fused` needs Burn's fusion, which only CubeCL runtimes have.
    #[error(
        "mode `fused` runs Burn's fusion, which needs a CubeCL device (wgpu or cuda); device `cpu` runs Flex, which has none. Use device = \"wgpu\" or \"auto\""
    )]
    FusedOnCpu,
    /// CUDA asked for, but this binary was built without it.
    #[error(
        "device `{0}` needs the CUDA runtime, but this binary was built without it: rebuild with `--features cuda` (CUDARC_CUDA_VERSION=13000 for a CUDA 13.0 driver)"
    )]
    CudaNotBuilt(DeviceSpec),
    /// CUDA built in, but no usable device with that index.
    #[error("device `{device}`: {reason}")]
    CudaUnavailable {
        /// The device asked for.
        device: DeviceSpec,
        /// What the CUDA runtime said.
        reason: String,
    },
    /// wgpu found no adapter.
    #[error(
        "device `wgpu`: no usable adapter ({0}); on a Linux machine without a GPU install Mesa's lavapipe: apt-get install mesa-vulkan-drivers"
    )]
    WgpuUnavailable(String),
}

/// Picks the stack for `mode` on `device`, checking that the device exists.
///
/// `auto` picks CUDA device 0 when built with CUDA and a GPU answers; otherwise the CPU, or
/// wgpu for `fused` (the only fusion-capable runtime without CUDA).
pub fn resolve_stack(mode: Mode, device: DeviceSpec) -> Result<Stack, StackError> {
    let device = match device {
        DeviceSpec::Auto if cuda_device_count() > 0 => DeviceSpec::Cuda(0),
        DeviceSpec::Auto if mode == Mode::Fused => DeviceSpec::Wgpu,
        DeviceSpec::Auto => DeviceSpec::Cpu,
        other => other,
    };
    let stack = match (mode, device) {
        (Mode::Eager, DeviceSpec::Cpu) => Stack::CpuEager,
        (Mode::Acc, DeviceSpec::Cpu) => Stack::CpuAcc,
        (Mode::Fused, DeviceSpec::Cpu) => return Err(StackError::FusedOnCpu),
        (Mode::Eager, DeviceSpec::Wgpu) => Stack::WgpuEager,
        (Mode::Fused, DeviceSpec::Wgpu) => Stack::WgpuFused,
        (Mode::Acc, DeviceSpec::Wgpu) => Stack::WgpuAcc,
        (mode, DeviceSpec::Cuda(i)) => {
            check_cuda(device, i)?;
            match mode {
                Mode::Eager => Stack::CudaEager(i),
                Mode::Fused => Stack::CudaFused(i),
                Mode::Acc => Stack::CudaAcc(i),
            }
        }
        (_, DeviceSpec::Auto) => unreachable!("auto was resolved above"),
    };
    if stack.device() == DeviceSpec::Wgpu {
        check_wgpu()?;
    }
    Ok(stack)
}

/// Runs `body` with the panic message captured instead of printed; `Err(message)` on panic.
///
/// Runtimes report a missing device by panicking while creating their client; this turns that
/// into an error the recipe check can show.
fn quietly<T>(body: impl FnOnce() -> T + std::panic::UnwindSafe) -> Result<T, String> {
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let result = std::panic::catch_unwind(body);
    std::panic::set_hook(hook);
    result.map_err(|e| {
        e.downcast_ref::<String>()
            .cloned()
            .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "the runtime panicked".into())
    })
}

fn check_wgpu() -> Result<(), StackError> {
    use burn::tensor::backend::Backend;
    quietly(|| CubeBackend::<WgpuRuntime, f32, i32, u32>::name(&WgpuDevice::default()))
        .map(|_| ())
        .map_err(StackError::WgpuUnavailable)
}

#[cfg(feature = "cuda")]
fn cuda_device_count() -> usize {
    use burn::backend::cuda::CudaDevice;
    use burn::tensor::backend::{Backend, DeviceOps};
    quietly(|| {
        let device = CudaDevice::default();
        CudaEagerBackend::device_count(device.id().type_id)
    })
    .unwrap_or(0)
}

#[cfg(not(feature = "cuda"))]
fn cuda_device_count() -> usize {
    0
}

#[cfg(feature = "cuda")]
fn check_cuda(device: DeviceSpec, index: usize) -> Result<(), StackError> {
    let count = cuda_device_count();
    if index < count {
        Ok(())
    } else {
        Err(StackError::CudaUnavailable {
            device,
            reason: format!("{count} CUDA device(s) visible (driver and libcuda.so must load)"),
        })
    }
}

#[cfg(not(feature = "cuda"))]
fn check_cuda(device: DeviceSpec, _index: usize) -> Result<(), StackError> {
    Err(StackError::CudaNotBuilt(device))
}

#[cfg(feature = "cuda")]
type CudaEagerBackend = CubeBackend<burn::cubecl::cuda::CudaRuntime, f32, i32, u8>;

/// Work generic over the backend, run by [`with_stack`] on the concrete stack.
pub trait StackTask {
    /// What the work returns.
    type Output;
    /// Runs the work on backend `B` and `device`.
    /// Every stack is an autodiff backend on which blocks can be checkpointed.
    fn run<B: CheckpointBackend>(self, stack: Stack, device: B::Device) -> Self::Output;
}

/// Runs `task` on the backend type and device of `stack`.
pub fn with_stack<T: StackTask>(stack: Stack, task: T) -> T::Output {
    type WgpuEager = CubeBackend<WgpuRuntime, f32, i32, u32>;
    type Balanced = BalancedCheckpointing;
    match stack {
        Stack::CpuEager => task.run::<Autodiff<Flex>>(stack, FlexDevice),
        Stack::CpuAcc => task.run::<Acc<Autodiff<Flex, Balanced>>>(stack, FlexDevice),
        Stack::WgpuEager => task.run::<Autodiff<WgpuEager>>(stack, WgpuDevice::default()),
        Stack::WgpuFused => task.run::<Autodiff<Wgpu>>(stack, WgpuDevice::default()),
        Stack::WgpuAcc => task.run::<Acc<Autodiff<Wgpu, Balanced>>>(stack, WgpuDevice::default()),
        #[cfg(feature = "cuda")]
        Stack::CudaEager(i) => {
            task.run::<Autodiff<CudaEagerBackend>>(stack, burn::backend::cuda::CudaDevice::new(i))
        }
        #[cfg(feature = "cuda")]
        Stack::CudaFused(i) => task
            .run::<Autodiff<burn::backend::Cuda>>(stack, burn::backend::cuda::CudaDevice::new(i)),
        #[cfg(feature = "cuda")]
        Stack::CudaAcc(i) => task.run::<Acc<Autodiff<burn::backend::Cuda, Balanced>>>(
            stack,
            burn::backend::cuda::CudaDevice::new(i),
        ),
        #[cfg(not(feature = "cuda"))]
        Stack::CudaEager(_) | Stack::CudaFused(_) | Stack::CudaAcc(_) => {
            unreachable!("resolve_stack refuses CUDA stacks in a build without the cuda feature")
        }
    }
}
