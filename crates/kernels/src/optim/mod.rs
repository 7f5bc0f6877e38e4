//! Multi-tensor optimizer steps: Adam/AdamW and SGD with momentum over a whole group of
//! parameter tensors in one pass per element, the equivalents of PyTorch's fused optimizers
//! (`torch.optim.AdamW(fused=True)`, `torch._fused_adamw_`).
//!
//! A plain optimizer step is a dozen element-wise ops per parameter (scale, add, square, sqrt,
//! divide, select for the skipped step, ...), each one reading and writing whole tensors: on
//! ResNet-50 that is a third of a CPU training step. Here each element of a parameter, its
//! gradient and its optimizer state is read once and written once:
//!
//! - [`reference`](mod@reference): the update with plain Burn ops, per tensor (ground truth of
//!   the tests, and the path of backends without a fused implementation);
//! - `kernel` / [`launch`]: CubeCL kernels taking up to a device-dependent number of tensors
//!   per launch (as CubeCL sequences), so a step over a few hundred parameters is a few
//!   launches;
//! - `cpu`: one fused, multi-threaded loop for Flex, updating optimizer state in place;
//! - [`MultiTensorOptim`]: the backend extension, implemented for [`CubeBackend`] (kernels),
//!   `Fusion<B>` (one custom operation per group), Flex (the CPU loop) and NdArray (reference);
//! - [`counters`]: launch counters that prove the fused path ran.
//!
//! What is shared by the group but differs per tensor (the bias corrections of Adam, which
//! depend on each parameter's own step count; the first-step flag of SGD's momentum buffer) is
//! passed as small f32 `[n]` tensors computed on the device by the caller, so no step reads
//! anything back to the host. A step is skipped on the device by the found-inf flag of a
//! gradient scaler: every output is then exactly its input.

mod backends;
pub mod counters;
mod cpu;
mod fusion;
mod group;
mod kernel;
pub mod launch;
pub mod reference;

pub use counters::{
    multi_tensor_adam_launches, multi_tensor_buffer_copies, multi_tensor_sgd_launches,
};
pub use group::{AdamGroup, AdamHyper, AdamUpdate, SgdGroup, SgdHyper, SgdUpdate};

use burn::tensor::backend::Backend;
use burn::tensor::ops::FloatTensor;
#[cfg(doc)]
use burn_cubecl::CubeBackend;

/// A backend that can update a group of parameter tensors in one fused pass.
///
/// Every tensor of a group has the same float dtype (the master weights' dtype, f32 under
/// autocast); `params[i]`, `grads[i]` and the state tensors of `i` share one shape. The
/// provided methods compute with the plain-Burn [`reference`](mod@reference), tensor by
/// tensor, so any backend can opt in with an empty `impl`.
///
/// `found_inf`: f32 `[1]` on the device, `> 0` to skip the step (every output equals its
/// input); `None` always steps.
pub trait MultiTensorOptim: Backend {
    /// One Adam/AdamW step of every tensor of `group`; see [`AdamGroup`] for the update.
    fn multi_tensor_adam(
        group: AdamGroup<Self>,
        hyper: AdamHyper,
        found_inf: Option<FloatTensor<Self>>,
    ) -> AdamUpdate<Self> {
        reference::adam_group_reference::<Self>(group, hyper, found_inf)
    }

    /// One SGD step of every tensor of `group`; see [`SgdGroup`] for the update.
    fn multi_tensor_sgd(
        group: SgdGroup<Self>,
        hyper: SgdHyper,
        found_inf: Option<FloatTensor<Self>>,
    ) -> SgdUpdate<Self> {
        reference::sgd_group_reference::<Self>(group, hyper, found_inf)
    }
}
