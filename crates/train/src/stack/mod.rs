//! Mode × device → the backend stack of DESIGN.md §2, resolved before any work starts.
//!
//! | mode  | cpu                                        | wgpu / cuda                                       |
//! |-------|--------------------------------------------|---------------------------------------------------|
//! | eager | `Autodiff<Flex>`                           | `Autodiff<CubeBackend<R>>`                        |
//! | fused | —                                          | `Autodiff<Fusion<CubeBackend<R>>>`                |
//! | acc   | `Acc<Autodiff<CpuFlex, Balanced>>`         | `Acc<Autodiff<Fusion<CubeAcc<R>>, Balanced>>`     |
//!
//! `CpuFlex` (burnacc-fusion) is Flex with burnacc's CPU kernels (broadcasting element-wise
//! ops, the convolution backward as one matrix product) and Burn's fusion IR, so that
//! `Fusion<CpuFlex>` can run burnacc's fusers. `CubeAcc<R>` (burnacc-fusion) is CubeCL's
//! backend under burnacc's fusion runtime: `Fusion<CubeAcc<R>>` runs Burn's CubeCL fusers and
//! burnacc's.
//!
//! Each stack is a type implementing [`BackendStack`] (its autodiff backend, device, memory
//! reading and kernel installation) in this folder: `cpu.rs`, `wgpu.rs`, `cuda.rs`.
//! [`with_stack`] holds the one `match` that turns a resolved mode and device into one of
//! them; adding a stack is its type and one arm there.
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

pub mod acc_kernels;
mod cpu;
#[cfg(feature = "cuda")]
mod cuda;
mod wgpu;

pub use acc_kernels::{
    KernelRoutes, KernelUnavailable, UnusedKernel, route_kernels, unused_kernels,
};

pub use cpu::{CpuAcc, CpuEager};
pub use wgpu::{WgpuAcc, WgpuEager, WgpuFused};

/// The autodiff backend of the CPU `acc` stack (what tests of the shipped stack run).
pub type CpuAccBackend = <CpuAcc as BackendStack>::Backend;

/// The autodiff backend of the wgpu `acc` stack (what tests of the shipped stack run).
pub type WgpuAccBackend = <WgpuAcc as BackendStack>::Backend;

use crate::memory::MemoryReading;
use crate::recipe::{DeviceSpec, KernelsSection, Mode};
use burn::tensor::backend::BackendTypes;
use burnacc_checkpoint::CheckpointBackend;
use std::fmt;

/// The device type of a stack's autodiff backend.
pub type StackDevice<S> = <<S as BackendStack>::Backend as BackendTypes>::Device;

/// One concrete backend stack: what `train` builds for a mode on a device.
pub trait BackendStack: 'static {
    /// The autodiff backend models train on; blocks can be checkpointed on it.
    type Backend: CheckpointBackend;
    /// The Burn type of the stack, for logs.
    const TYPE_NAME: &'static str;

    /// The device a resolved `spec` (`cpu`, `wgpu`, `cuda:N`) names.
    fn device(spec: DeviceSpec) -> StackDevice<Self>;

    /// Checks that the device of `spec` can run here (an adapter answers, the index exists).
    fn check_device(spec: DeviceSpec) -> Result<(), StackError> {
        let _ = spec;
        Ok(())
    }

    /// Bytes in use and at the peak on `device` (blocking on the device queue for CubeCL).
    fn memory(device: &StackDevice<Self>) -> Option<MemoryReading>;

    /// Installs the routes of the kernels `kernels` switches on, on this thread, while the
    /// returned routes live; `Err` names why this stack cannot run them. Stacks other than
    /// `acc` run none.
    fn install_kernels(kernels: &KernelsSection) -> Result<KernelRoutes, &'static str> {
        match kernels.enabled().is_empty() {
            true => Ok(KernelRoutes::none()),
            false => Err("burnacc's kernels run in mode acc"),
        }
    }
}

/// A resolved stack: a mode on a concrete device (never `auto`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stack {
    mode: Mode,
    device: DeviceSpec,
}

impl Stack {
    /// `mode` on `device` (`cpu`, `wgpu`, `cuda:N`), unchecked: [`resolve_stack`] checks that
    /// the stack exists in this build and its device answers.
    pub fn new(mode: Mode, device: DeviceSpec) -> Self {
        debug_assert!(
            device != DeviceSpec::Auto,
            "a stack runs on a concrete device"
        );
        Self { mode, device }
    }

    /// The mode this stack runs.
    pub fn mode(self) -> Mode {
        self.mode
    }

    /// The concrete device, as a recipe would name it.
    pub fn device(self) -> DeviceSpec {
        self.device
    }

    /// The Burn type of the stack, for logs.
    pub fn type_name(self) -> &'static str {
        with_stack(self, TypeName)
    }

    /// This stack on CUDA device `index`; a CPU or wgpu stack (one device each) unchanged.
    pub fn on_cuda_index(self, index: usize) -> Stack {
        match self.device {
            DeviceSpec::Cuda(_) => Stack::new(self.mode, DeviceSpec::Cuda(index)),
            _ => self,
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
            self.mode,
            self.device,
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

/// Picks the stack for `mode` on `device`, checking that this build has it and that the
/// device answers.
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
    let stack = Stack::new(mode, device);
    try_with_stack(stack, CheckDevice)??;
    Ok(stack)
}

/// Work generic over the backend stack, run by [`with_stack`] on the concrete stack.
pub trait StackTask {
    /// What the work returns.
    type Output;
    /// Runs the work on stack `S` (its autodiff backend `S::Backend`) and `device`.
    fn run<S: BackendStack>(self, stack: Stack, device: StackDevice<S>) -> Self::Output;
}

/// Runs `task` on the backend type and device of `stack` (resolved by [`resolve_stack`]).
pub fn with_stack<T: StackTask>(stack: Stack, task: T) -> T::Output {
    try_with_stack(stack, task)
        .unwrap_or_else(|e| panic!("{stack:?} was not resolved by resolve_stack: {e}"))
}

/// The one place where a mode and a device become a stack type: [`with_stack`], or why this
/// build has no such stack.
fn try_with_stack<T: StackTask>(stack: Stack, task: T) -> Result<T::Output, StackError> {
    fn run<S: BackendStack, T: StackTask>(stack: Stack, task: T) -> T::Output {
        let device = S::device(stack.device);
        task.run::<S>(stack, device)
    }
    Ok(match (stack.mode, stack.device) {
        (Mode::Eager, DeviceSpec::Cpu) => run::<cpu::CpuEager, T>(stack, task),
        (Mode::Acc, DeviceSpec::Cpu) => run::<cpu::CpuAcc, T>(stack, task),
        (Mode::Eager, DeviceSpec::Wgpu) => run::<wgpu::WgpuEager, T>(stack, task),
        (Mode::Fused, DeviceSpec::Wgpu) => run::<wgpu::WgpuFused, T>(stack, task),
        (Mode::Acc, DeviceSpec::Wgpu) => run::<wgpu::WgpuAcc, T>(stack, task),
        #[cfg(feature = "cuda")]
        (Mode::Eager, DeviceSpec::Cuda(_)) => run::<cuda::CudaEager, T>(stack, task),
        #[cfg(feature = "cuda")]
        (Mode::Fused, DeviceSpec::Cuda(_)) => run::<cuda::CudaFused, T>(stack, task),
        #[cfg(feature = "cuda")]
        (Mode::Acc, DeviceSpec::Cuda(_)) => run::<cuda::CudaAcc, T>(stack, task),
        #[cfg(not(feature = "cuda"))]
        (_, DeviceSpec::Cuda(_)) => return Err(StackError::CudaNotBuilt(stack.device)),
        (Mode::Fused, DeviceSpec::Cpu) => return Err(StackError::FusedOnCpu),
        (_, DeviceSpec::Auto) => unreachable!("a stack runs on a concrete device"),
    })
}

/// [`BackendStack::check_device`].
struct CheckDevice;

impl StackTask for CheckDevice {
    type Output = Result<(), StackError>;
    fn run<S: BackendStack>(self, stack: Stack, _device: StackDevice<S>) -> Self::Output {
        S::check_device(stack.device)
    }
}

/// [`BackendStack::TYPE_NAME`].
struct TypeName;

impl StackTask for TypeName {
    type Output = &'static str;
    fn run<S: BackendStack>(self, _stack: Stack, _device: StackDevice<S>) -> &'static str {
        S::TYPE_NAME
    }
}

/// Runs `body` with the panic message captured instead of printed; `Err(message)` on panic.
///
/// Runtimes report a missing device by panicking while creating their client; this turns that
/// into an error the recipe check can show.
pub(crate) fn quietly<T>(body: impl FnOnce() -> T + std::panic::UnwindSafe) -> Result<T, String> {
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

#[cfg(feature = "cuda")]
fn cuda_device_count() -> usize {
    cuda::device_count()
}

#[cfg(not(feature = "cuda"))]
fn cuda_device_count() -> usize {
    0
}
