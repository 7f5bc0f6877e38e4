//! Fused CubeCL kernels for burnacc, each with a plain-Burn reference it is tested against.
//!
//! - [`layer_norm`]: LayerNorm over the last dimension, forward and backward, as one kernel per
//!   row (plus a two-stage column reduction for the parameter gradients).
//! - [`bias_dropout_add`]: `residual + dropout(x + bias)`, one pass each way, mask from a seed.
//! - [`gelu`]: QuickGELU and bias + exact GELU, forward and backward, one pass each.
//! - [`optim`]: multi-tensor Adam/AdamW and SGD steps, one pass per element over many tensors.

pub mod bias_dropout_add;
mod fallback;
pub mod gelu;
pub mod layer_norm;
pub mod optim;
