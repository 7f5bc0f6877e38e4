//! Chains of `sum_dim` / `mean_dim` as one multi-axis reduction.
//!
//! Autodiff reduces the gradient of a broadcast operand one axis at a time: the `[1, C, 1, 1]`
//! scale of a batch norm gets `sum_dim(0)`, `sum_dim(2)`, `sum_dim(3)` of a `[N, C, H, W]`
//! gradient, each a kernel and a buffer. Burn's fusers run a reduction at most per kernel, so
//! the chain stays three launches. The [`SumChainFuser`] recognises such a chain in Burn's IR
//! (each reduction reading the previous one's output for the last time) and the
//! [`SumChainOptimization`] runs it as one kernel (`burnacc_kernels::sum_axes`), or as no kernel
//! at all when every reduced axis has size 1 (a sum over a single element is the element).

mod fuser;
mod optimization;
mod view;

pub(crate) use fuser::SumChainFuser;
pub use optimization::{SumChain, SumChainOptimization};
