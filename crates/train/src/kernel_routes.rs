//! `[kernels]`: routes the ops a recipe switches on to burnacc's fused kernels, for the
//! concrete backend inside `Acc` of the stack that runs (see `burnacc_backend::routes`).

use crate::recipe::KernelsSection;
use crate::stack::Stack;
use burn::backend::Autodiff;
use burn::backend::autodiff::checkpoint::strategy::BalancedCheckpointing;
use burn::backend::{Flex, Wgpu};
use burn::tensor::TensorMetadata;
use burn::tensor::ops::FloatTensor;
use burnacc_backend::routes::{RouteGuard, route_layer_norm};
use burnacc_kernels::layer_norm::LayerNormKernel;

/// A `[kernels]` key this stack cannot honour.
#[derive(Debug, thiserror::Error)]
#[error("kernels.{key}: not available on {stack}: {why}")]
pub struct KernelUnavailable {
    /// The key.
    pub key: &'static str,
    /// The stack that would run.
    pub stack: Stack,
    /// Why.
    pub why: &'static str,
}

/// `ModuleOps::layer_norm` as burnacc's fused LayerNorm on `K` (`beta` absent: zeros).
fn fused_layer_norm<K: LayerNormKernel>(
    x: FloatTensor<K>,
    gamma: FloatTensor<K>,
    beta: Option<FloatTensor<K>>,
    epsilon: f64,
) -> FloatTensor<K> {
    let beta = beta.unwrap_or_else(|| {
        K::float_zeros(
            gamma.shape(),
            &K::float_device(&gamma),
            gamma.dtype().into(),
        )
    });
    K::fused_layer_norm(x, gamma, beta, epsilon)
}

/// Routes what `kernels` switches on for `stack`, on this thread, while the guards live.
pub fn route_kernels(
    stack: Stack,
    kernels: &KernelsSection,
) -> Result<Vec<RouteGuard>, KernelUnavailable> {
    let mut guards = Vec::new();
    if kernels.layer_norm {
        // The backend inside `Acc` of each acc stack (see `crate::stack`).
        type CpuInner = Autodiff<Flex, BalancedCheckpointing>;
        type WgpuInner = Autodiff<Wgpu, BalancedCheckpointing>;
        guards.push(match stack {
            Stack::CpuAcc => route_layer_norm::<CpuInner>(fused_layer_norm::<CpuInner>),
            Stack::WgpuAcc => route_layer_norm::<WgpuInner>(fused_layer_norm::<WgpuInner>),
            #[cfg(feature = "cuda")]
            Stack::CudaAcc(_) => {
                type CudaInner = Autodiff<burn::backend::Cuda, BalancedCheckpointing>;
                route_layer_norm::<CudaInner>(fused_layer_norm::<CudaInner>)
            }
            #[cfg(not(feature = "cuda"))]
            Stack::CudaAcc(_) => {
                unreachable!("resolve_stack refuses CUDA without the cuda feature")
            }
            Stack::CpuEager
            | Stack::WgpuEager
            | Stack::WgpuFused
            | Stack::CudaEager(_)
            | Stack::CudaFused(_) => {
                return Err(KernelUnavailable {
                    key: "layer_norm",
                    stack,
                    why: "burnacc's kernels run in mode acc",
                });
            }
        });
    }
    Ok(guards)
}
