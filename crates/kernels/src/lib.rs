//! Fused CubeCL kernels for burnacc, each with a plain-Burn reference it is tested against.
//!
//! - [`layer_norm`]: LayerNorm over the last dimension, forward and backward, as one kernel per
//!   row (plus a two-stage column reduction for the parameter gradients).

pub mod layer_norm;
