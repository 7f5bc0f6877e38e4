//! Kernel routes: which ops run a fused implementation instead of the plain one, on this
//! thread. One registry for every routed op, with one keying rule.
//!
//! `Acc<B>` and the optimizers are generic over any backend, but a fused kernel exists only for
//! some (CubeCL backends, Fusion over them, `Autodiff` over those with a hand-written backward,
//! Flex's fused loops). The code that knows the concrete stack (the trainer, from a recipe's
//! `[kernels]`) installs the implementation for that stack; the op looks it up when it is
//! called, and runs its plain form when nothing is installed.
//!
//! **Keying rule**: a route is keyed by the op ([`Route`]) and by the backend type *on which
//! the op is called*: `layer_norm` of a model on `Acc<A>` is keyed by `Acc<A>`, a fused op a
//! model calls through [`crate::fused`] by the model's backend, an optimizer step by the
//! backend the optimizer updates parameters on.
//!
//! Routes are per thread, like the op counters: a training run issues its ops from its thread.
//! Every lookup that finds a route counts as a call, so a run can report, at its end, each
//! route it installed that was never taken ([`installed`]): an acceleration switched on that
//! never ran is reported, not silently ignored.

use burn::tensor::backend::Backend;
use burn::tensor::ops::{FloatTensor, IntTensor};
use std::any::{Any, TypeId};
use std::cell::RefCell;
use std::collections::HashMap;

/// An op that can be routed to a fused implementation.
pub trait Route: 'static {
    /// The recipe key that switches the route on (`"kernels.layer_norm"`); several routes may
    /// share one key (a kernel and its reverse).
    const KEY: &'static str;
    /// The implementation's signature on backend `B`.
    type Fn<B: Backend>: Copy + 'static;
}

/// Route keys: the op and the backend type it is called on.
type Key = (TypeId, TypeId);

struct Entry {
    key: &'static str,
    implementation: Box<dyn Any>,
    calls: u64,
}

thread_local! {
    static ROUTES: RefCell<HashMap<Key, Entry>> = RefCell::new(HashMap::new());
}

/// Removes its route when dropped.
#[must_use = "the route is removed when the guard is dropped"]
pub struct RouteGuard {
    key: Key,
}

impl Drop for RouteGuard {
    fn drop(&mut self) {
        ROUTES.with(|routes| routes.borrow_mut().remove(&self.key));
    }
}

/// Routes op `R` called on backend `B` to `f`, on this thread, until the guard is dropped.
pub fn install<R: Route, B: Backend>(f: R::Fn<B>) -> RouteGuard {
    let key = (TypeId::of::<R>(), TypeId::of::<B>());
    let entry = Entry {
        key: R::KEY,
        implementation: Box::new(f),
        calls: 0,
    };
    ROUTES.with(|routes| routes.borrow_mut().insert(key, entry));
    RouteGuard { key }
}

/// The implementation of op `R` on backend `B` on this thread, if one is installed; a found
/// route counts as one call.
pub fn lookup<R: Route, B: Backend>() -> Option<R::Fn<B>> {
    ROUTES.with(|routes| {
        let mut routes = routes.borrow_mut();
        let entry = routes.get_mut(&(TypeId::of::<R>(), TypeId::of::<B>()))?;
        let f = *entry.implementation.downcast_ref::<R::Fn<B>>()?;
        entry.calls += 1;
        Some(f)
    })
}

/// Whether op `R` on backend `B` is routed on this thread (not counted as a call).
pub fn is_routed<R: Route, B: Backend>() -> bool {
    ROUTES.with(|routes| {
        routes
            .borrow()
            .contains_key(&(TypeId::of::<R>(), TypeId::of::<B>()))
    })
}

/// Every recipe key with a route installed on this thread, with the calls its routes took,
/// sorted by key.
pub fn installed() -> Vec<(&'static str, u64)> {
    let mut by_key: HashMap<&'static str, u64> = HashMap::new();
    ROUTES.with(|routes| {
        for entry in routes.borrow().values() {
            *by_key.entry(entry.key).or_default() += entry.calls;
        }
    });
    let mut keys: Vec<_> = by_key.into_iter().collect();
    keys.sort();
    keys
}

/// `layer_norm` of `Acc<A>`: `(x, gamma, beta, epsilon) → y`, with `x: [..., width]`,
/// `gamma`, `beta: [width]`; `y` like `x`. Each routed call bumps the kernel counter
/// `fused_layer_norm`.
pub struct LayerNorm;

impl Route for LayerNorm {
    const KEY: &'static str = "kernels.layer_norm";
    type Fn<B: Backend> =
        fn(FloatTensor<B>, FloatTensor<B>, Option<FloatTensor<B>>, f64) -> FloatTensor<B>;
}

/// `softmax` of `Acc<A>`: `(x, dim) → softmax(x)` over `dim`, like `x`. Each routed call bumps
/// the kernel counter `fused_softmax`.
pub struct Softmax;

impl Route for Softmax {
    const KEY: &'static str = "kernels.softmax";
    type Fn<B: Backend> = fn(FloatTensor<B>, usize) -> FloatTensor<B>;
}

/// [`crate::fused::batch_norm`]: a training-mode batch norm, then a ReLU when asked, `(x,
/// gamma, beta, epsilon, relu) → (y, mean, rstd)`, with `x: [N, C, ...]`, `gamma`, `beta: [C]`
/// in the dtype of `x`; `y` like `x`, the batch's `mean` and `rstd = 1 / sqrt(var + epsilon)`
/// `[C]` (f32 for f32 and narrower inputs), detached. Counter `fused_batch_norm`.
pub struct BatchNorm;

impl Route for BatchNorm {
    const KEY: &'static str = "kernels.batch_norm";
    type Fn<B: Backend> = fn(
        FloatTensor<B>,
        FloatTensor<B>,
        FloatTensor<B>,
        f64,
        bool,
    ) -> (FloatTensor<B>, FloatTensor<B>, FloatTensor<B>);
}

/// [`crate::fused::bias_gelu`]: `gelu(x + bias)` (exact, erf), `x: [..., width]`, `bias:
/// [width]` in the dtype of `x`; the result like `x`. Counter `fused_bias_gelu`.
pub struct BiasGelu;

impl Route for BiasGelu {
    const KEY: &'static str = "kernels.bias_gelu";
    type Fn<B: Backend> = fn(FloatTensor<B>, FloatTensor<B>) -> FloatTensor<B>;
}

/// [`crate::fused::quick_gelu`]: `x·sigmoid(1.702·x)`, any shape; the result like `x`.
/// Counter `fused_quick_gelu`.
pub struct QuickGelu;

impl Route for QuickGelu {
    const KEY: &'static str = "kernels.quick_gelu";
    type Fn<B: Backend> = fn(FloatTensor<B>) -> FloatTensor<B>;
}

/// [`crate::fused::bias_dropout_add`]: `residual + dropout(x + bias, p)`, `x`, `residual:
/// [..., width]`, `bias: [width]` in the dtype of `x`, `p` in `[0, 1)` (0: no dropout); the
/// implementation draws its mask's seed from the device's generator. Counter
/// `fused_bias_dropout_add`.
pub struct BiasDropoutAdd;

impl Route for BiasDropoutAdd {
    const KEY: &'static str = "kernels.bias_dropout_add";
    type Fn<B: Backend> = fn(FloatTensor<B>, FloatTensor<B>, FloatTensor<B>, f64) -> FloatTensor<B>;
}

/// [`crate::fused::window_process`]: Swin's cyclic shift by `−shift` + zero pad + window
/// partition, `(x, resolution, window, shift)` with `x: [batch, h, w, c]`, `resolution = [h,
/// w]` → `[batch · ⌈h/wh⌉ · ⌈w/ww⌉, wh · ww, c]` in `x`'s dtype. Counter
/// `fused_window_process`.
pub struct WindowProcess;

impl Route for WindowProcess {
    const KEY: &'static str = "kernels.window_process";
    type Fn<B: Backend> = fn(FloatTensor<B>, [usize; 2], [usize; 2], [usize; 2]) -> FloatTensor<B>;
}

/// [`crate::fused::window_process_reverse`]: the inverse of [`WindowProcess`] (merge, crop,
/// shift by `+shift`), `(windows, resolution, window, shift)` → `[batch, h, w, c]`. Counter
/// `fused_window_process_reverse`.
pub struct WindowProcessReverse;

impl Route for WindowProcessReverse {
    const KEY: &'static str = "kernels.window_process";
    type Fn<B: Backend> = fn(FloatTensor<B>, [usize; 2], [usize; 2], [usize; 2]) -> FloatTensor<B>;
}

/// [`crate::fused::window_softmax`]: Swin's window-attention softmax, `(scores, table, index,
/// mask)` → `softmax(scores + table[index] + mask)` over the last dimension, with `scores:
/// [windows, heads, n, n]`, `table: [offsets, heads]` and `mask: [num_windows, n, n]` in the
/// dtype of `scores`, `index: [n · n]`; the result like `scores`. Counter `fused_swin_fmha`.
pub struct WindowSoftmax;

impl Route for WindowSoftmax {
    const KEY: &'static str = "kernels.swin_fmha";
    type Fn<B: Backend> =
        fn(FloatTensor<B>, FloatTensor<B>, IntTensor<B>, Option<FloatTensor<B>>) -> FloatTensor<B>;
}
