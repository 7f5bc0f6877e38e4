//! Kernel routes: which ops run a fused implementation instead of the plain one, on this
//! thread.
//!
//! `Acc<B>` is generic over any backend, but a fused kernel exists only for some (CubeCL
//! backends, and `Autodiff` over them with a hand-written backward). The code that knows the
//! concrete stack (the trainer) registers the implementation for that backend; the op looks
//! it up by type when it is called, and falls back to the plain op when nothing is routed.
//! Routes are per thread, like the op counters: a training run's ops are issued from its
//! thread.
//!
//! Two kinds of op are routed:
//! - Burn ops `Acc` sees (`layer_norm`): keyed by `Acc`'s inner backend `B`;
//! - burnacc's model-level fused ops ([`crate::fused`]: bias + GELU, QuickGELU, bias +
//!   dropout + residual add, Swin's window processing and window-attention softmax), which a
//!   model calls on its own backend: keyed by that backend (on an acc stack, `Acc<B>` itself).

use burn::tensor::backend::Backend;
use burn::tensor::ops::{FloatTensor, IntTensor};
use std::any::{Any, TypeId};
use std::cell::RefCell;
use std::collections::HashMap;

/// A LayerNorm over the last dimension on backend `B`: `(x, gamma, beta, epsilon) → y`, with
/// `x: [..., width]`, `gamma`, `beta: [width]`; `y` like `x`.
pub type LayerNormFn<B> =
    fn(FloatTensor<B>, FloatTensor<B>, Option<FloatTensor<B>>, f64) -> FloatTensor<B>;

/// `gelu(x + bias)` (exact, erf) on backend `B`: `x: [..., width]`, `bias: [width]` in the
/// dtype of `x`; the result like `x`.
pub type BiasGeluFn<B> = fn(FloatTensor<B>, FloatTensor<B>) -> FloatTensor<B>;

/// `x·sigmoid(1.702·x)` on backend `B`, any shape; the result like `x`.
pub type QuickGeluFn<B> = fn(FloatTensor<B>) -> FloatTensor<B>;

/// `residual + dropout(x + bias, p)` on backend `B`: `x`, `residual: [..., width]`, `bias:
/// [width]` in the dtype of `x`, `p` in `[0, 1)` (0: no dropout); the implementation draws
/// its mask's seed from the device's generator; the result like `x`.
pub type BiasDropoutAddFn<B> =
    fn(FloatTensor<B>, FloatTensor<B>, FloatTensor<B>, f64) -> FloatTensor<B>;

/// Swin's cyclic shift by `−shift` + zero pad + window partition on backend `B`:
/// `(x, resolution, window, shift)` with `x: [batch, h, w, c]`, `resolution = [h, w]` →
/// `[batch · ⌈h/wh⌉ · ⌈w/ww⌉, wh · ww, c]` like `x`'s dtype.
pub type WindowProcessFn<B> =
    fn(FloatTensor<B>, [usize; 2], [usize; 2], [usize; 2]) -> FloatTensor<B>;

/// The inverse of a [`WindowProcessFn`] (merge, crop, shift by `+shift`): `(windows,
/// resolution, window, shift)` → `[batch, h, w, c]`.
pub type WindowProcessReverseFn<B> = WindowProcessFn<B>;

/// Swin's window-attention softmax on backend `B`: `(scores, table, index, mask)` →
/// `softmax(scores + table[index] + mask)` over the last dimension, with `scores: [windows,
/// heads, n, n]`, `table: [offsets, heads]` and `mask: [num_windows, n, n]` in the dtype of
/// `scores`, `index: [n · n]`; the result like `scores`.
pub type WindowSoftmaxFn<B> =
    fn(FloatTensor<B>, FloatTensor<B>, IntTensor<B>, Option<FloatTensor<B>>) -> FloatTensor<B>;

/// Route keys: the op's name and the backend's type.
type Key = (&'static str, TypeId);

thread_local! {
    static ROUTES: RefCell<HashMap<Key, Box<dyn Any>>> = RefCell::new(HashMap::new());
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

fn insert<B: Backend, F: 'static>(op: &'static str, f: F) -> RouteGuard {
    let key = (op, TypeId::of::<B>());
    ROUTES.with(|routes| routes.borrow_mut().insert(key, Box::new(f)));
    RouteGuard { key }
}

fn lookup<B: Backend, F: Copy + 'static>(op: &'static str) -> Option<F> {
    ROUTES.with(|routes| {
        routes
            .borrow()
            .get(&(op, TypeId::of::<B>()))
            .and_then(|f| f.downcast_ref::<F>().copied())
    })
}

/// Routes `layer_norm` of `Acc<B>` on this thread to `f` until the guard is dropped. Each call
/// that takes the route bumps the kernel counter `fused_layer_norm`.
pub fn route_layer_norm<B: Backend>(f: LayerNormFn<B>) -> RouteGuard {
    insert::<B, _>("layer_norm", f)
}

/// The route of `layer_norm` for `B` on this thread, if any.
pub(crate) fn layer_norm_route<B: Backend>() -> Option<LayerNormFn<B>> {
    lookup::<B, LayerNormFn<B>>("layer_norm")
}

/// Routes [`crate::fused::bias_gelu`] on backend `B` (the model's) to `f`; each routed call
/// bumps the kernel counter `fused_bias_gelu`.
pub fn route_bias_gelu<B: Backend>(f: BiasGeluFn<B>) -> RouteGuard {
    insert::<B, _>("bias_gelu", f)
}

pub(crate) fn bias_gelu_route<B: Backend>() -> Option<BiasGeluFn<B>> {
    lookup::<B, BiasGeluFn<B>>("bias_gelu")
}

/// Routes [`crate::fused::quick_gelu`] on backend `B` to `f`; each routed call bumps the
/// kernel counter `fused_quick_gelu`.
pub fn route_quick_gelu<B: Backend>(f: QuickGeluFn<B>) -> RouteGuard {
    insert::<B, _>("quick_gelu", f)
}

pub(crate) fn quick_gelu_route<B: Backend>() -> Option<QuickGeluFn<B>> {
    lookup::<B, QuickGeluFn<B>>("quick_gelu")
}

/// Routes [`crate::fused::bias_dropout_add`] on backend `B` to `f`; each routed call bumps
/// the kernel counter `fused_bias_dropout_add`.
pub fn route_bias_dropout_add<B: Backend>(f: BiasDropoutAddFn<B>) -> RouteGuard {
    insert::<B, _>("bias_dropout_add", f)
}

pub(crate) fn bias_dropout_add_route<B: Backend>() -> Option<BiasDropoutAddFn<B>> {
    lookup::<B, BiasDropoutAddFn<B>>("bias_dropout_add")
}

/// Routes [`crate::fused::window_process`] on backend `B` to `f`; each routed call bumps the
/// kernel counter `fused_window_process`.
pub fn route_window_process<B: Backend>(f: WindowProcessFn<B>) -> RouteGuard {
    insert::<B, _>("window_process", f)
}

pub(crate) fn window_process_route<B: Backend>() -> Option<WindowProcessFn<B>> {
    lookup::<B, WindowProcessFn<B>>("window_process")
}

/// Routes [`crate::fused::window_process_reverse`] on backend `B` to `f`; each routed call
/// bumps the kernel counter `fused_window_process_reverse`.
pub fn route_window_process_reverse<B: Backend>(f: WindowProcessReverseFn<B>) -> RouteGuard {
    insert::<B, _>("window_process_reverse", f)
}

pub(crate) fn window_process_reverse_route<B: Backend>() -> Option<WindowProcessReverseFn<B>> {
    lookup::<B, WindowProcessReverseFn<B>>("window_process_reverse")
}

/// Routes [`crate::fused::window_softmax`] on backend `B` to `f`; each routed call bumps the
/// kernel counter `fused_swin_fmha`.
pub fn route_window_softmax<B: Backend>(f: WindowSoftmaxFn<B>) -> RouteGuard {
    insert::<B, _>("window_softmax", f)
}

pub(crate) fn window_softmax_route<B: Backend>() -> Option<WindowSoftmaxFn<B>> {
    lookup::<B, WindowSoftmaxFn<B>>("window_softmax")
}
