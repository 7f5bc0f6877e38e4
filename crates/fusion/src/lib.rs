//! burnacc's graph-level fusion.
//!
//! [`CpuFlex`] is burnacc's CPU backend: Flex (Burn's CPU backend) with its primitive types and
//! every op, except where burnacc has a faster one (element-wise ops that broadcast or read
//! strided inputs, scalar ops on views, reshapes of views as views and copies of strided views
//! by contiguous rows, zeros and matrix products written once into their output buffer, the
//! convolution backward as one large matrix product, a batch of products against one matrix
//! as one product, Bernoulli masks, GELU with a branch-free erf, and burnacc's fused kernels:
//! LayerNorm, bias + GELU, bias + dropout + add, Swin's window softmax), and with Burn's
//! fusion IR (`BackendIr`) and a fusion runtime ([`CpuFusionRuntime`]), so that
//! `Fusion<CpuFlex>` records every op in Burn's fusion stream and burnacc's fusers run
//! recognised op sequences as single passes over memory: chains of element-wise ops
//! (`cpu::elementwise`).
//!
//! [`CubeAcc`] is the same on CubeCL devices (wgpu, CUDA): CubeCL's backend under a type of
//! burnacc's own, so that `Fusion<CubeAcc<R>>` runs burnacc's fusion runtime
//! ([`CubeAccRuntime`]): Burn's own CubeCL fusers, unchanged.
//!
//! Shapes and dtypes: everything Flex stores (f32, f64, f16, bf16, ints, bools); burnacc's
//! kernels compute f32 tensors and leave other dtypes to Flex.

pub mod counters;
pub mod cpu;
pub mod cube;
pub mod kernels;
mod relabel;

pub use burn_fusion::Fusion;
pub use cpu::{CpuFlex, CpuFusionRuntime};
pub use cube::{CubeAcc, CubeAccRuntime};

/// Burn's fusion over burnacc's CPU backend: the inner backend of the CPU `acc` stack.
pub type CpuFused = Fusion<CpuFlex>;

/// Burn's fusion over burnacc's CubeCL backend, with burnacc's fusion runtime: the inner
/// backend of the `acc` stacks on wgpu (`R = WgpuRuntime`) and CUDA (`CudaRuntime`).
pub type CubeFused<R> = Fusion<CubeAcc<R>>;
