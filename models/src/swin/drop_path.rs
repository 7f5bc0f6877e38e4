//! Stochastic depth (timm `drop_path`, "DropPath"): drops a residual branch for whole samples.
//!
//! Paper: G. Huang, Y. Sun, Z. Liu, D. Sedra, K. Weinberger, "Deep Networks with Stochastic
//! Depth", ECCV 2016, <https://arxiv.org/abs/1603.09382>.

use burn::tensor::backend::Backend;
use burn::tensor::{Distribution, Tensor};

/// x: `[batch, ...]` → same shape: each sample's branch is zeroed with probability `prob` and
/// the kept ones are scaled by `1 / (1 − prob)` (timm's `scale_by_keep=True`), so the expected
/// value is unchanged.
///
/// Active only when training, which Burn expresses by the backend: on an autodiff backend it
/// drops, on an inference backend (`model.valid()`) it is the identity, as Burn's `Dropout`.
/// The random draw uses the device's generator, so seeding the device replays it.
pub fn drop_path<B: Backend, const D: usize>(x: Tensor<B, D>, prob: f64) -> Tensor<B, D> {
    if prob == 0.0 || !B::ad_enabled(&x.device()) {
        return x;
    }
    let keep = 1.0 - prob;
    let dims = x.dims();
    let mut shape = [1; D];
    shape[0] = dims[0];
    let kept = Tensor::<B, D>::random(shape, Distribution::Bernoulli(keep), &x.device());
    // prob = 1 drops every sample; timm then skips the (infinite) rescaling.
    let scale = if keep > 0.0 { 1.0 / keep } else { 0.0 };
    x * kept.mul_scalar(scale).expand(dims)
}
