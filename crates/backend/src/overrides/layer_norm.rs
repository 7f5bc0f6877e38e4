//! `layer_norm`: the routed fused LayerNorm when one is installed for `Acc<B>`
//! ([`crate::routes::LayerNorm`]), else the inner backend's (Burn's decomposed default).

use crate::Acc;
use crate::counters;
use crate::routes::{LayerNorm, lookup};
use burn::tensor::backend::Backend;
use burn::tensor::ops::FloatTensor;

/// tensor: `[..., width]`, gamma, beta: `[width]` → like `tensor`. Under autocast the inputs
/// arrive in f32 (the policy lists `layer_norm` as an f32 op).
pub fn layer_norm<B: Backend>(
    tensor: FloatTensor<B>,
    gamma: FloatTensor<B>,
    beta: Option<FloatTensor<B>>,
    epsilon: f64,
) -> FloatTensor<B> {
    match lookup::<LayerNorm, Acc<B>>() {
        Some(fused) => {
            counters::bump_kernel("fused_layer_norm");
            fused(tensor, gamma, beta, epsilon)
        }
        None => B::layer_norm(tensor, gamma, beta, epsilon),
    }
}
