//! Sync-free optimizers: SGD, Adam and AdamW as in `torch.optim`, whose step takes the
//! found-inf flag of a [`GradScaler`](crate::scaler::GradScaler) as a device tensor and skips
//! the update on the device (a select between the new and the old value of each parameter and
//! state tensor), so a training step never reads anything back to the host.
//!
//! Step counters (for Adam's bias corrections and SGD's first-step buffer) are f32 `[1]`
//! tensors per parameter, as PyTorch keeps them with `capturable=True`: a skipped step does
//! not advance them, which the host could not know without a read.
//!
//! Parameters keep their dtype (f32 master weights) and state has the parameter's dtype;
//! gradients in another dtype are cast to it first.

mod adam;
mod device;
mod error;
mod mapper;
mod multi_tensor;
pub mod route;
mod sgd;
mod state;
mod step_count;

pub use adam::{Adam, AdamConfig, AdamParamState, WeightDecayMode};
pub use error::OptimError;
pub use route::{
    AdamStep, AdamStepFn, SgdStep, SgdStepFn, route_adam_of_backend, route_sgd_of_backend,
};
pub use sgd::{Sgd, SgdConfig, SgdParamState};
pub use state::{OptimizerStateData, ParamStateData, StateError};

use burn::module::AutodiffModule;
use burn::optim::GradientsParams;
use burn::tensor::Tensor;
use burn::tensor::backend::AutodiffBackend;

/// An optimizer whose step may be skipped on the device.
pub trait SyncFreeOptimizer<M: AutodiffModule<B>, B: AutodiffBackend> {
    /// Updates every float parameter of `module` that has a gradient in `grads`, with
    /// learning rate `lr`.
    ///
    /// found_inf: f32 `[1]` on the device (1.0: skip this step, as recorded by
    /// `GradScaler::unscale`), or `None` to always step. A skipped step leaves parameters,
    /// state and step counters exactly as they were. Nothing is read back to the host.
    fn step(
        &mut self,
        lr: f64,
        module: M,
        grads: GradientsParams,
        found_inf: Option<&Tensor<B::InnerBackend, 1>>,
    ) -> M;

    /// A host copy of the per-parameter state (for a checkpoint); reads the device.
    fn state(&self) -> Result<OptimizerStateData, StateError>;

    /// Replaces the per-parameter state with `state` (from [`SyncFreeOptimizer::state`] of an
    /// optimizer of the same kind), on `device`. On error nothing changes.
    fn load_state(
        &mut self,
        state: OptimizerStateData,
        device: &burn::tensor::Device<B::InnerBackend>,
    ) -> Result<(), StateError>;
}
