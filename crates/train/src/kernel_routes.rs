//! `[kernels]`: routes the ops a recipe switches on to burnacc's fused kernels, for the
//! concrete backend inside `Acc` of the stack that runs (see `burnacc_backend::routes`).

use crate::recipe::{KernelsSection, Mode};
use crate::stack::Stack;
use burn::backend::Autodiff;
use burn::backend::autodiff::checkpoint::strategy::BalancedCheckpointing;
use burn::backend::{Flex, Wgpu};
use burn::tensor::TensorMetadata;
use burn::tensor::ops::{FloatTensor, IntTensor};
use burnacc_amp::optim::{FusedOptimizers, MultiTensorGuard, MultiTensorRoute, route_multi_tensor};
use burnacc_backend::Acc;
use burnacc_backend::routes::{
    RouteGuard, route_bias_dropout_add, route_bias_gelu, route_layer_norm, route_quick_gelu,
    route_window_process, route_window_process_reverse, route_window_softmax,
};
use burnacc_kernels::bias_dropout_add::{BiasDropoutAddKernel, dropout_seed};
use burnacc_kernels::gelu::GeluKernel;
use burnacc_kernels::layer_norm::LayerNormKernel;
use burnacc_kernels::optim::{
    AdamGroup, AdamHyper, AdamUpdate, MultiTensorOptim, SgdGroup, SgdHyper, SgdUpdate,
};
use burnacc_kernels::swin_attention::SwinAttentionKernel;
use burnacc_kernels::window_process::{WindowGeometry, WindowProcessKernel};

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

/// `gelu(x + bias)` as `K`'s fused op, for a model on `Acc<K>` (`K`: the autodiff backend,
/// whose implementation is one graph node with the fused backward).
fn acc_bias_gelu<K: GeluKernel>(
    x: FloatTensor<Acc<K>>,
    bias: FloatTensor<Acc<K>>,
) -> FloatTensor<Acc<K>> {
    K::fused_bias_gelu(x, Some(bias))
}

/// QuickGELU as `K`'s fused op, for a model on `Acc<K>`.
fn acc_quick_gelu<K: GeluKernel>(x: FloatTensor<Acc<K>>) -> FloatTensor<Acc<K>> {
    K::fused_quick_gelu(x)
}

/// `residual + dropout(x + bias, p)` as `K`'s fused op, for a model on `Acc<K>`; the mask's
/// seed is drawn on the device from its generator, so checkpoint replay, which re-seeds the
/// generator, redraws the same mask.
fn acc_bias_dropout_add<K: BiasDropoutAddKernel>(
    x: FloatTensor<Acc<K>>,
    bias: FloatTensor<Acc<K>>,
    residual: FloatTensor<Acc<K>>,
    p: f64,
) -> FloatTensor<Acc<K>> {
    let seed = (p > 0.0).then(|| dropout_seed::<K>(&K::float_device(&x)).into_primitive());
    K::fused_bias_dropout_add(x, Some(bias), residual, p, seed)
}

/// Swin's shift + pad + partition as `K`'s fused op, for a model on `Acc<K>`.
fn acc_window_process<K: WindowProcessKernel>(
    x: FloatTensor<Acc<K>>,
    resolution: [usize; 2],
    window: [usize; 2],
    shift: [usize; 2],
) -> FloatTensor<Acc<K>> {
    K::fused_window_process(x, window_geometry(resolution, window, shift))
}

/// Swin's merge + crop + reverse shift as `K`'s fused op, for a model on `Acc<K>`.
fn acc_window_process_reverse<K: WindowProcessKernel>(
    windows: FloatTensor<Acc<K>>,
    resolution: [usize; 2],
    window: [usize; 2],
    shift: [usize; 2],
) -> FloatTensor<Acc<K>> {
    K::fused_window_process_reverse(windows, window_geometry(resolution, window, shift))
}

fn window_geometry(
    resolution: [usize; 2],
    window: [usize; 2],
    shift: [usize; 2],
) -> WindowGeometry {
    WindowGeometry {
        resolution,
        window,
        shift,
    }
}

/// Swin's bias + mask + softmax as `K`'s fused op, for a model on `Acc<K>`.
fn acc_window_softmax<K: SwinAttentionKernel>(
    scores: FloatTensor<Acc<K>>,
    table: FloatTensor<Acc<K>>,
    index: IntTensor<Acc<K>>,
    mask: Option<FloatTensor<Acc<K>>>,
) -> FloatTensor<Acc<K>> {
    K::fused_window_softmax(scores, table, index, mask)
}

/// The routes a recipe's `[kernels]` holds; each is removed when this is dropped.
pub struct KernelRoutes {
    _ops: Vec<RouteGuard>,
    _optimizer: Option<MultiTensorGuard>,
}

/// Routes what `kernels` switches on for `stack`, on this thread, while the returned routes
/// live.
pub fn route_kernels(
    stack: Stack,
    kernels: &KernelsSection,
) -> Result<KernelRoutes, KernelUnavailable> {
    if let Some(key) = kernels.enabled().first()
        && stack.mode() != Mode::Acc
    {
        return Err(KernelUnavailable {
            key: key.trim_start_matches("kernels."),
            stack,
            why: "burnacc's kernels run in mode acc",
        });
    }
    let optimizer = route_optimizer(stack, kernels);
    let mut ops = route_layer_norms(stack, kernels);
    ops.extend(route_model_ops(stack, kernels));
    Ok(KernelRoutes {
        _ops: ops,
        _optimizer: optimizer,
    })
}

/// The model-level fused ops (`bias_gelu`, `quick_gelu`, `bias_dropout_add`,
/// `window_process`, `swin_fmha`) for a model on `Acc<K>`.
fn route_acc_model_ops<K>(kernels: &KernelsSection) -> Vec<RouteGuard>
where
    K: GeluKernel + BiasDropoutAddKernel + WindowProcessKernel + SwinAttentionKernel,
{
    let mut guards = Vec::new();
    if kernels.bias_gelu {
        guards.push(route_bias_gelu::<Acc<K>>(acc_bias_gelu::<K>));
    }
    if kernels.quick_gelu {
        guards.push(route_quick_gelu::<Acc<K>>(acc_quick_gelu::<K>));
    }
    if kernels.bias_dropout_add {
        guards.push(route_bias_dropout_add::<Acc<K>>(acc_bias_dropout_add::<K>));
    }
    if kernels.window_process {
        guards.push(route_window_process::<Acc<K>>(acc_window_process::<K>));
        guards.push(route_window_process_reverse::<Acc<K>>(
            acc_window_process_reverse::<K>,
        ));
    }
    if kernels.swin_fmha {
        guards.push(route_window_softmax::<Acc<K>>(acc_window_softmax::<K>));
    }
    guards
}

/// `kernels.bias_gelu`, `quick_gelu`, `bias_dropout_add`, `window_process`, `swin_fmha`:
/// routed for the model's backend, `Acc` over the stack's autodiff backend.
fn route_model_ops(stack: Stack, kernels: &KernelsSection) -> Vec<RouteGuard> {
    let any = kernels.bias_gelu
        || kernels.quick_gelu
        || kernels.bias_dropout_add
        || kernels.window_process
        || kernels.swin_fmha;
    if !any {
        return Vec::new();
    }
    match stack {
        Stack::CpuAcc => route_acc_model_ops::<Autodiff<Flex, BalancedCheckpointing>>(kernels),
        Stack::WgpuAcc => route_acc_model_ops::<Autodiff<Wgpu, BalancedCheckpointing>>(kernels),
        #[cfg(feature = "cuda")]
        Stack::CudaAcc(_) => {
            route_acc_model_ops::<Autodiff<burn::backend::Cuda, BalancedCheckpointing>>(kernels)
        }
        #[cfg(not(feature = "cuda"))]
        Stack::CudaAcc(_) => unreachable!("resolve_stack refuses CUDA without the cuda feature"),
        _ => unreachable!("route_kernels admits acc stacks only"),
    }
}

/// `kernels.adam` / `kernels.sgd`: the optimizer runs on `Acc<K>`, `K` being the inner
/// backend of the stack's autodiff (Flex, or Fusion over CubeCL).
fn route_optimizer(stack: Stack, kernels: &KernelsSection) -> Option<MultiTensorGuard> {
    let which = FusedOptimizers {
        adam: kernels.adam,
        sgd: kernels.sgd,
    };
    if which == FusedOptimizers::default() {
        return None;
    }
    Some(match stack {
        Stack::CpuAcc => route_acc_optimizer::<Flex>(which),
        Stack::WgpuAcc => route_acc_optimizer::<Wgpu>(which),
        #[cfg(feature = "cuda")]
        Stack::CudaAcc(_) => route_acc_optimizer::<burn::backend::Cuda>(which),
        #[cfg(not(feature = "cuda"))]
        Stack::CudaAcc(_) => unreachable!("resolve_stack refuses CUDA without the cuda feature"),
        _ => unreachable!("route_kernels admits acc stacks only"),
    })
}

/// `kernels.layer_norm`.
fn route_layer_norms(stack: Stack, kernels: &KernelsSection) -> Vec<RouteGuard> {
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
            _ => unreachable!("route_kernels admits acc stacks only"),
        });
    }
    guards
}
