//! `[kernels]` on an acc stack: the recipe's keys install routes ([`burnacc_backend::routes`])
//! from the ops a model or an optimizer calls on the stack to burnacc's fused kernels on the
//! backend inside `Acc`; each route is keyed by the backend its op is called on.
//!
//! Adding a fused kernel: its folder in crates/kernels, its recipe key in
//! `burnacc_recipe::KernelsSection`, its route in `burnacc_backend::routes` and one line in
//! [`install_acc_kernels`].

use super::{BackendStack, Stack, StackDevice, StackTask, with_stack};
use crate::recipe::{KernelsSection, Mode};
use burn::tensor::TensorMetadata;
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::ops::{FloatTensor, IntTensor};
use burnacc_amp::optim::{AdamStep, SgdStep};
use burnacc_backend::Acc;
use burnacc_backend::routes::{
    BatchNorm, BiasDropoutAdd, BiasGelu, LayerNorm, QuickGelu, Route, RouteGuard, Softmax,
    WindowProcess, WindowProcessReverse, WindowSoftmax, install, installed,
};
use burnacc_kernels::batch_norm::BatchNormKernel;
use burnacc_kernels::bias_dropout_add::{BiasDropoutAddKernel, dropout_seed};
use burnacc_kernels::gelu::GeluKernel;
use burnacc_kernels::layer_norm::LayerNormKernel;
use burnacc_kernels::optim::{
    AdamGroup, AdamHyper, AdamUpdate, MultiTensorOptim, SgdGroup, SgdHyper, SgdUpdate,
};
use burnacc_kernels::softmax::SoftmaxKernel;
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

/// A `[kernels]` key switched on whose kernel the run never called (the model has no such
/// op, or another route took its place).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct UnusedKernel {
    /// The dotted recipe key, `"kernels.swin_fmha"`.
    pub key: &'static str,
}

impl std::fmt::Display for UnusedKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} = true, but its kernel never ran: this model does not call it",
            self.key
        )
    }
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

/// A training-mode batch norm (+ ReLU) as `K`'s fused op, for a model on `Acc<K>`: one graph
/// node with the fused backward; `(y, mean, rstd)`.
fn acc_batch_norm<K: BatchNormKernel>(
    x: FloatTensor<Acc<K>>,
    gamma: FloatTensor<Acc<K>>,
    beta: FloatTensor<Acc<K>>,
    epsilon: f64,
    relu: bool,
) -> (
    FloatTensor<Acc<K>>,
    FloatTensor<Acc<K>>,
    FloatTensor<Acc<K>>,
) {
    K::fused_batch_norm_with_stats(x, gamma, beta, epsilon, relu)
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

/// The routes a recipe's `[kernels]` installed on this thread; each is removed when this is
/// dropped.
pub struct KernelRoutes {
    _guards: Vec<RouteGuard>,
}

impl KernelRoutes {
    /// No routes.
    pub fn none() -> Self {
        Self {
            _guards: Vec::new(),
        }
    }
}

/// The `[kernels]` keys the recipe switched on whose routes are installed on this thread and
/// were never taken: an acceleration asked for that never ran, reported at the end of a run.
/// Keys on by mode acc's default ([`KernelsSection::by_default`]) are not reported: they are
/// on for every model, whichever ops it has.
pub fn unused_kernels(kernels: &KernelsSection) -> Vec<UnusedKernel> {
    installed()
        .into_iter()
        .filter(|&(key, calls)| calls == 0 && !kernels.by_default.contains(&key))
        .map(|(key, _)| UnusedKernel { key })
        .collect()
}

/// Installs what `kernels` switches on for `stack`, on this thread, while the returned routes
/// live; refused (naming the first key) on a stack that cannot run burnacc's kernels. On a
/// stack of another mode than acc, mode acc's defaults do not apply
/// ([`KernelsSection::without_defaults`]).
pub fn route_kernels(
    stack: Stack,
    kernels: &KernelsSection,
) -> Result<KernelRoutes, KernelUnavailable> {
    let explicit;
    let kernels = match stack.mode() {
        Mode::Acc => kernels,
        _ => {
            explicit = kernels.without_defaults();
            &explicit
        }
    };
    with_stack(stack, InstallKernels(kernels)).map_err(|why| KernelUnavailable {
        key: kernels
            .enabled()
            .first()
            .map_or("", |key| key.trim_start_matches("kernels.")),
        stack,
        why,
    })
}

struct InstallKernels<'a>(&'a KernelsSection);

impl StackTask for InstallKernels<'_> {
    type Output = Result<KernelRoutes, &'static str>;
    fn run<S: BackendStack>(self, _stack: Stack, _device: StackDevice<S>) -> Self::Output {
        S::install_kernels(self.0)
    }
}

/// Every fused kernel burnacc can run under `Acc<A>`, `A` being the stack's autodiff
/// backend, over the compute backend `K` the optimizer updates parameters on (`Acc<K>`).
pub trait AccKernels:
    GeluKernel
    + BiasDropoutAddKernel
    + WindowProcessKernel
    + SwinAttentionKernel
    + SoftmaxKernel
    + LayerNormKernel
    + BatchNormKernel
{
}

impl<A> AccKernels for A where
    A: GeluKernel
        + BiasDropoutAddKernel
        + WindowProcessKernel
        + SwinAttentionKernel
        + SoftmaxKernel
        + LayerNormKernel
        + BatchNormKernel
{
}

/// Installs the routes `kernels` switches on for a model on `Acc<A>` whose optimizer runs on
/// `Acc<K>`. One line per key.
pub fn install_acc_kernels<A, K>(kernels: &KernelsSection) -> KernelRoutes
where
    A: AutodiffBackend + AccKernels,
    K: MultiTensorOptim,
{
    let mut guards = Vec::new();
    let mut on = |key: bool, guard: fn() -> RouteGuard| {
        if key {
            guards.push(guard());
        }
    };
    on(kernels.layer_norm, || {
        install::<LayerNorm, Acc<A>>(fused_layer_norm::<A>)
    });
    on(kernels.softmax, || {
        install::<Softmax, Acc<A>>(A::fused_softmax)
    });
    on(kernels.batch_norm, || {
        install::<BatchNorm, Acc<A>>(acc_batch_norm::<A>)
    });
    on(kernels.adam, || install::<AdamStep, Acc<K>>(acc_adam::<K>));
    on(kernels.sgd, || install::<SgdStep, Acc<K>>(acc_sgd::<K>));
    on(kernels.bias_gelu, || {
        install::<BiasGelu, Acc<A>>(acc_bias_gelu::<A>)
    });
    on(kernels.quick_gelu, || {
        install::<QuickGelu, Acc<A>>(acc_quick_gelu::<A>)
    });
    on(kernels.bias_dropout_add, || {
        install::<BiasDropoutAdd, Acc<A>>(acc_bias_dropout_add::<A>)
    });
    on(kernels.window_process, || {
        install::<WindowProcess, Acc<A>>(acc_window_process::<A>)
    });
    on(kernels.window_process, || {
        install::<WindowProcessReverse, Acc<A>>(acc_window_process_reverse::<A>)
    });
    on(kernels.swin_fmha, || {
        install::<WindowSoftmax, Acc<A>>(acc_window_softmax::<A>)
    });
    KernelRoutes { _guards: guards }
}

/// The routes' keys, checked against the recipe's: a route whose key the recipe lacks would be
/// reported under a name the user cannot set.
pub fn route_keys() -> [&'static str; 11] {
    [
        LayerNorm::KEY,
        Softmax::KEY,
        BatchNorm::KEY,
        AdamStep::KEY,
        SgdStep::KEY,
        BiasGelu::KEY,
        QuickGelu::KEY,
        BiasDropoutAdd::KEY,
        WindowProcess::KEY,
        WindowProcessReverse::KEY,
        WindowSoftmax::KEY,
    ]
}
