//! Multi-tensor routes: which backends run the optimizers' step as one fused multi-tensor
//! update ([`burnacc_kernels::optim`]) instead of a dozen element-wise ops per parameter.
//!
//! The optimizers are generic over any backend, but a fused step exists only for some. The
//! code that knows the concrete stack (the trainer, from `[kernels]`) registers the step for
//! the backend the optimizer runs on; the optimizers look it up by type at each step. Routes
//! are per thread, as a training run's steps are issued from its thread.

use burn::tensor::backend::Backend;
use burn::tensor::ops::FloatTensor;
use burnacc_kernels::optim::{
    AdamGroup, AdamHyper, AdamUpdate, MultiTensorOptim, SgdGroup, SgdHyper, SgdUpdate,
};
use std::any::{Any, TypeId};
use std::cell::RefCell;
use std::collections::HashMap;

/// A multi-tensor Adam/AdamW step on `B`.
pub type AdamStepFn<B> = fn(AdamGroup<B>, AdamHyper, Option<FloatTensor<B>>) -> AdamUpdate<B>;
/// A multi-tensor SGD step on `B`.
pub type SgdStepFn<B> = fn(SgdGroup<B>, SgdHyper, Option<FloatTensor<B>>) -> SgdUpdate<B>;

/// The fused steps of one backend.
pub struct MultiTensorRoute<B: Backend> {
    /// Adam and AdamW.
    pub adam: AdamStepFn<B>,
    /// SGD, with or without momentum.
    pub sgd: SgdStepFn<B>,
}

impl<B: Backend> Clone for MultiTensorRoute<B> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<B: Backend> Copy for MultiTensorRoute<B> {}

impl<B: MultiTensorOptim> MultiTensorRoute<B> {
    /// `B`'s own [`MultiTensorOptim`] steps.
    pub fn of_backend() -> Self {
        Self {
            adam: B::multi_tensor_adam,
            sgd: B::multi_tensor_sgd,
        }
    }
}

/// Which optimizers take the route.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FusedOptimizers {
    /// Adam and AdamW.
    pub adam: bool,
    /// SGD.
    pub sgd: bool,
}

thread_local! {
    static ROUTES: RefCell<HashMap<TypeId, (Box<dyn Any>, FusedOptimizers)>> =
        RefCell::new(HashMap::new());
}

/// Removes its route when dropped.
#[must_use = "the route is removed when the guard is dropped"]
pub struct MultiTensorGuard {
    backend: TypeId,
}

impl Drop for MultiTensorGuard {
    fn drop(&mut self) {
        ROUTES.with(|routes| routes.borrow_mut().remove(&self.backend));
    }
}

/// Routes the steps `which` names of every sync-free optimizer running on `B` (the
/// autodiff backend's inner backend) to `route`, on this thread, until the guard is dropped.
pub fn route_multi_tensor<B: Backend>(
    route: MultiTensorRoute<B>,
    which: FusedOptimizers,
) -> MultiTensorGuard {
    let backend = TypeId::of::<B>();
    ROUTES.with(|routes| {
        routes
            .borrow_mut()
            .insert(backend, (Box::new(route), which))
    });
    MultiTensorGuard { backend }
}

/// The route of `B` on this thread, with the optimizers it covers.
pub(crate) fn multi_tensor_route<B: Backend>() -> Option<(MultiTensorRoute<B>, FusedOptimizers)> {
    ROUTES.with(|routes| {
        let routes = routes.borrow();
        let (route, which) = routes.get(&TypeId::of::<B>())?;
        route
            .downcast_ref::<MultiTensorRoute<B>>()
            .map(|route| (*route, *which))
    })
}
