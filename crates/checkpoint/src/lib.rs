//! Gradient checkpointing of whole blocks (PyTorch's `torch.utils.checkpoint`, TorchAcc's
//! `checkpoint`), for any model written against Burn.
//!
//! A checkpointed block's forward pass is not recorded: only its input is kept. The backward
//! pass recomputes the block with autodiff and back-propagates through it, so the activations
//! inside the block live only while its gradient is computed. See [`CheckpointTape`].
//!
//! Burn 0.21's own `BalancedCheckpointing` recomputes single element-wise ops; this works one
//! level up, on blocks, and composes with it (the recompute is recorded with the stack's
//! strategy).

mod backend;
pub mod heap;
pub mod planner;
mod restore;
mod tape;

pub use backend::{CheckpointBackend, NodeKey};
pub use planner::{BlockCost, BudgetTooSmall, CheckpointPlan, plan_checkpoints};
pub use tape::{CheckpointTape, block_seed};
