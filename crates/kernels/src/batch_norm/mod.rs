//! Batch norm in training mode, fused into CubeCL kernels:
//!
//! ```text
//! y = (x − mean) / sqrt(var + eps) · gamma + beta        [then max(y, 0) when fused with a ReLU]
//! ```
//!
//! with `mean` and the biased `var` taken per channel (axis 1) over every other axis of
//! `x: [N, C, ...]`, as `burn::nn::BatchNorm` and `torch.nn.BatchNorm2d` normalise in training.
//! Plain Burn spells this as about five launches forward and, through autodiff, about
//! eighteen backward per batch norm (ResNet-50's bulk); the fused pair is three each way,
//! with f32 accumulation whatever the storage dtype (f32, f16, bf16).
//!
//! - [`reference`](mod@reference): the same maths with plain Burn ops on any backend (ground
//!   truth of the tests beside `burn::nn::BatchNorm`);
//! - `kernel`: the `#[cube]` kernels (per-channel partial sums, statistics, normalisation;
//!   parameter gradients, input gradient);
//! - [`launch`]: their launchers on Burn's CubeCL primitive,
//!   [`burn_cubecl::tensor::CubeTensor`];
//! - [`counters`]: launch counters that prove the fused path ran.
//!
//! The forward returns per-channel `mean` and `rstd = 1 / sqrt(var + eps)` (f32 `[C]`), which
//! is all the backward needs besides `x`, `gamma`, the upstream gradient and, with a fused
//! ReLU, the forward's output. The running statistics are the caller's (`[C]`-sized ops).

pub mod counters;
mod kernel;
pub mod launch;
pub mod reference;

pub use counters::{batch_norm_backward_launches, batch_norm_forward_launches};
pub use launch::{batch_norm_backward_cube, batch_norm_forward_cube};
pub use reference::{batch_norm_backward_reference, batch_norm_reference};
