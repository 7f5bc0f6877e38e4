//! `[kernels]`: routes the ops a recipe switches on to burnacc's fused kernels, for the
//! concrete backend inside `Acc` of the stack that runs (see `burnacc_backend::routes`).

use crate::recipe::KernelsSection;
use crate::stack::Stack;
use burn::backend::Autodiff;
use burn::backend::autodiff::checkpoint::strategy::BalancedCheckpointing;
use burn::backend::{Flex, Wgpu};
use burn::tensor::TensorMetadata;
use burn::tensor::ops::FloatTensor;
use burnacc_amp::optim::{FusedOptimizers, MultiTensorGuard, MultiTensorRoute, route_multi_tensor};
use burnacc_backend::Acc;
use burnacc_backend::routes::{RouteGuard, route_layer_norm};
use burnacc_kernels::layer_norm::LayerNormKernel;
use burnacc_kernels::optim::{
    AdamGroup, AdamHyper, AdamUpdate, MultiTensorOptim, SgdGroup, SgdHyper, SgdUpdate,
};

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

/// The multi-tensor Adam step of `K` for the optimizer running on `Acc<K>`: `Acc<K>` shares
/// `K`'s tensor primitives, so the tensors move across unchanged.
fn acc_adam<K: MultiTensorOptim>(
    group: AdamGroup<Acc<K>>,
    hyper: AdamHyper,
    found_inf: Option<FloatTensor<Acc<K>>>,
) -> AdamUpdate<Acc<K>> {
    let AdamGroup {
        params,
        grads,
        exp_avg,
        exp_avg_sq,
        step_size,
        bc2_sqrt,
    } = group;
    let group = AdamGroup::<K> {
        params,
        grads,
        exp_avg,
        exp_avg_sq,
        step_size,
        bc2_sqrt,
    };
    let AdamUpdate {
        params,
        exp_avg,
        exp_avg_sq,
    } = K::multi_tensor_adam(group, hyper, found_inf);
    AdamUpdate {
        params,
        exp_avg,
        exp_avg_sq,
    }
}

/// The multi-tensor SGD step of `K` for the optimizer running on `Acc<K>`, as [`acc_adam`].
fn acc_sgd<K: MultiTensorOptim>(
    group: SgdGroup<Acc<K>>,
    hyper: SgdHyper,
    found_inf: Option<FloatTensor<Acc<K>>>,
) -> SgdUpdate<Acc<K>> {
    let SgdGroup {
        params,
        grads,
        momentum_buffer,
        first,
    } = group;
    let group = SgdGroup::<K> {
        params,
        grads,
        momentum_buffer,
        first,
    };
    let SgdUpdate {
        params,
        momentum_buffer,
    } = K::multi_tensor_sgd(group, hyper, found_inf);
    SgdUpdate {
        params,
        momentum_buffer,
    }
}

/// Routes the optimizers `which` names, running on `Acc<K>`, to `K`'s multi-tensor steps.
fn route_acc_optimizer<K: MultiTensorOptim>(which: FusedOptimizers) -> MultiTensorGuard {
    let route = MultiTensorRoute::<Acc<K>> {
        adam: acc_adam::<K>,
        sgd: acc_sgd::<K>,
    };
    route_multi_tensor(route, which)
}

/// The routes a recipe's `[kernels]` holds; each is removed when this is dropped.
pub struct KernelRoutes {
    _layer_norm: Vec<RouteGuard>,
    _optimizer: Option<MultiTensorGuard>,
}

/// Routes what `kernels` switches on for `stack`, on this thread, while the returned routes
/// live.
pub fn route_kernels(
    stack: Stack,
    kernels: &KernelsSection,
) -> Result<KernelRoutes, KernelUnavailable> {
    let optimizer = route_optimizer(stack, kernels)?;
    Ok(KernelRoutes {
        _layer_norm: route_layer_norms(stack, kernels)?,
        _optimizer: optimizer,
    })
}

/// `kernels.adam` / `kernels.sgd`: the optimizer runs on `Acc<K>`, `K` being the inner
/// backend of the stack's autodiff (Flex, or Fusion over CubeCL).
fn route_optimizer(
    stack: Stack,
    kernels: &KernelsSection,
) -> Result<Option<MultiTensorGuard>, KernelUnavailable> {
    let which = FusedOptimizers {
        adam: kernels.adam,
        sgd: kernels.sgd,
    };
    if which == FusedOptimizers::default() {
        return Ok(None);
    }
    Ok(Some(match stack {
        Stack::CpuAcc => route_acc_optimizer::<Flex>(which),
        Stack::WgpuAcc => route_acc_optimizer::<Wgpu>(which),
        #[cfg(feature = "cuda")]
        Stack::CudaAcc(_) => route_acc_optimizer::<burn::backend::Cuda>(which),
        #[cfg(not(feature = "cuda"))]
        Stack::CudaAcc(_) => unreachable!("resolve_stack refuses CUDA without the cuda feature"),
        Stack::CpuEager
        | Stack::WgpuEager
        | Stack::WgpuFused
        | Stack::CudaEager(_)
        | Stack::CudaFused(_) => {
            return Err(KernelUnavailable {
                key: if kernels.adam { "adam" } else { "sgd" },
                stack,
                why: "burnacc's kernels run in mode acc",
            });
        }
    }))
}

/// `kernels.layer_norm`.
fn route_layer_norms(
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
