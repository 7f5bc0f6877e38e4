//! `softmax`: the routed softmax when one is installed for `Acc<B>`
//! ([`crate::routes::Softmax`]: one autodiff node with the analytic backward), else the inner
//! backend's (on `Autodiff`, Burn's five recorded ops).

use crate::Acc;
use crate::counters;
use crate::routes::{Softmax, lookup};
use burn::tensor::backend::Backend;
use burn::tensor::ops::FloatTensor;

/// tensor: any shape, `dim` < its rank → like `tensor`. Under autocast the input arrives in
/// f32 (the policy lists `softmax` as an f32 op).
pub fn softmax<B: Backend>(tensor: FloatTensor<B>, dim: usize) -> FloatTensor<B> {
    match lookup::<Softmax, Acc<B>>() {
        Some(fused) => {
            counters::bump_kernel("fused_softmax");
            fused(tensor, dim)
        }
        None => B::softmax(tensor, dim),
    }
}
