//! Burn's element-wise fuser, seeing through two ops it closes on:
//!
//! - a `reshape` Burn's fuser rejects (one that lowers the rank, as the `[1, C, 1, 1] → [C]`
//!   in a batch norm's running averages, or whose shape does not broadcast with the kernel's)
//!   of a tensor the block did not produce: it runs ahead of the kernel, where it only
//!   relabels the buffer when the tensor is contiguous (a copy otherwise, as unfused), and the
//!   kernel reads its output as one more input;
//! - a `sum_dim` / `mean_dim` over an axis of size 1 (the `sum_dim` of the gradient in Burn's
//!   backward of every `sum_dim` / `mean_dim`): an identity, given to Burn's fuser as an
//!   assignment.
//!
//! Burn's stream only keeps blocks merged while one of their fusers is still open, so the ops
//! Burn's fuser closed on also cut the tiny per-channel ops of every batch norm into
//! segments of one launch each.

mod fuser;
mod optimization;

pub(crate) use fuser::ElementWiseViewsFuser;
pub use optimization::{ElementWiseViewsOptimization, ElementWiseViewsState};
