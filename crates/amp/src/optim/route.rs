//! Multi-tensor routes: which backends run the optimizers' step as one fused multi-tensor
//! update ([`burnacc_kernels::optim`]) instead of a dozen element-wise ops per parameter.
//!
//! The optimizers are generic over any backend, but a fused step exists only for some. The
//! code that knows the concrete stack (the trainer, from `[kernels]`) installs the step in
//! burnacc's route registry ([`burnacc_backend::routes`]) for the backend the optimizer updates
//! parameters on (the autodiff backend's inner backend); the optimizers look it up at each
//! step.

use burn::tensor::backend::Backend;
use burn::tensor::ops::FloatTensor;
use burnacc_backend::routes::{Route, RouteGuard, install};
use burnacc_kernels::optim::{
    AdamGroup, AdamHyper, AdamUpdate, MultiTensorOptim, SgdGroup, SgdHyper, SgdUpdate,
};

/// A multi-tensor Adam/AdamW step on `B`.
pub type AdamStepFn<B> = fn(AdamGroup<B>, AdamHyper, Option<FloatTensor<B>>) -> AdamUpdate<B>;
/// A multi-tensor SGD step on `B`.
pub type SgdStepFn<B> = fn(SgdGroup<B>, SgdHyper, Option<FloatTensor<B>>) -> SgdUpdate<B>;

/// The step of every sync-free Adam and AdamW: `kernels.adam`.
pub struct AdamStep;

impl Route for AdamStep {
    const KEY: &'static str = "kernels.adam";
    type Fn<B: Backend> = AdamStepFn<B>;
}

/// The step of every sync-free SGD: `kernels.sgd`.
pub struct SgdStep;

impl Route for SgdStep {
    const KEY: &'static str = "kernels.sgd";
    type Fn<B: Backend> = SgdStepFn<B>;
}

/// Routes the Adam/AdamW steps of optimizers updating parameters on `B` to `B`'s own
/// multi-tensor step, on this thread, until the guard is dropped.
pub fn route_adam_of_backend<B: MultiTensorOptim>() -> RouteGuard {
    install::<AdamStep, B>(B::multi_tensor_adam)
}

/// Routes the SGD steps of optimizers updating parameters on `B` to `B`'s own multi-tensor
/// step, as [`route_adam_of_backend`].
pub fn route_sgd_of_backend<B: MultiTensorOptim>() -> RouteGuard {
    install::<SgdStep, B>(B::multi_tensor_sgd)
}
