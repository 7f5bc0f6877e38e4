//! Kernel routes: which ops of `Acc<B>` run a fused implementation instead of the inner
//! backend's, on this thread.
//!
//! `Acc<B>` is generic over any backend, but a fused kernel exists only for some (CubeCL
//! backends, and `Autodiff` over them with a hand-written backward). The code that knows the
//! concrete stack (the trainer) registers the implementation for that `B`; `Acc<B>` looks it up
//! by type when the op is called, and falls back to `B`'s own op when nothing is routed. Routes
//! are per thread, like the op counters: a training run's ops are issued from its thread.

use burn::tensor::backend::Backend;
use burn::tensor::ops::FloatTensor;
use std::any::{Any, TypeId};
use std::cell::RefCell;
use std::collections::HashMap;

/// A LayerNorm over the last dimension on backend `B`: `(x, gamma, beta, epsilon) → y`, with
/// `x: [..., width]`, `gamma`, `beta: [width]`; `y` like `x`.
pub type LayerNormFn<B> =
    fn(FloatTensor<B>, FloatTensor<B>, Option<FloatTensor<B>>, f64) -> FloatTensor<B>;

thread_local! {
    static LAYER_NORM: RefCell<HashMap<TypeId, Box<dyn Any>>> = RefCell::new(HashMap::new());
}

/// Removes its route when dropped.
#[must_use = "the route is removed when the guard is dropped"]
pub struct RouteGuard {
    backend: TypeId,
}

impl Drop for RouteGuard {
    fn drop(&mut self) {
        LAYER_NORM.with(|routes| routes.borrow_mut().remove(&self.backend));
    }
}

/// Routes `layer_norm` of `Acc<B>` on this thread to `f` until the guard is dropped. Each call
/// that takes the route bumps the kernel counter `fused_layer_norm`.
pub fn route_layer_norm<B: Backend + 'static>(f: LayerNormFn<B>) -> RouteGuard {
    let backend = TypeId::of::<B>();
    LAYER_NORM.with(|routes| routes.borrow_mut().insert(backend, Box::new(f)));
    RouteGuard { backend }
}

/// The route of `layer_norm` for `B` on this thread, if any.
pub(crate) fn layer_norm_route<B: Backend + 'static>() -> Option<LayerNormFn<B>> {
    LAYER_NORM.with(|routes| {
        routes
            .borrow()
            .get(&TypeId::of::<B>())
            .and_then(|f| f.downcast_ref::<LayerNormFn<B>>().copied())
    })
}
