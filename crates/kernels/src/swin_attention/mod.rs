//! The softmax of Swin's window attention fused into one CubeCL kernel each way (the
//! bias/mask/softmax part of TorchAcc's `FusedSwinFmha`):
//!
//! ```text
//! probs = softmax(scores + table[index] + mask)        over the last dimension
//! dscores = probs ⊙ (dprobs − Σ_k dprobs ⊙ probs)
//! dtable[index[p], h] += Σ_windows dscores[·, h, p]     (p = q · n + k)
//! ```
//!
//! - `scores`: `[windows, heads, n, n]`, `q·kᵀ` of the already scaled queries (timm scales
//!   `q` before the product), windows images-outermost;
//! - `table`: the relative position bias table `[offsets, heads]`, gathered **in the kernel**
//!   through `index: [n · n]` (timm's `relative_position_index`), so the `[heads, n, n]` bias
//!   is never materialised;
//! - `mask`: the shifted-window mask `[num_windows, n, n]` (window `i` uses `mask[i mod
//!   num_windows]`), or none.
//!
//! Plain Burn runs a `select`, a permute copy, two broadcast adds (with the mask's reshape and
//! expand) and a softmax of three or more kernels, each a pass over the `[windows, heads, n,
//! n]` scores. The fused forward reads the scores twice (an online max/sum pass and a write
//! pass) and writes the probabilities once; the backward reads `probs` and `dprobs` and writes
//! `dscores`. The table's gradient is a small reduction (`Σ` over windows, then a
//! scatter-add of `n²` rows into `offsets`) done with Burn ops.
//!
//! The products with `k` and `v` stay Burn matmuls: they are compute-bound, and fusing them
//! (flash attention with a bias) does not pay at `n = 49` tokens per window.
//!
//! Computation is in f32 whatever the storage dtype; outputs are in the dtype of `scores`.
//!
//! - [`reference`](mod@reference): the same maths with plain Burn ops (ground truth, fallback);
//! - `kernel`, [`launch`]: the `#[cube]` kernels and their launchers on [`CubeTensor`];
//! - [`SwinAttentionKernel`]: the backend extension for [`CubeBackend`] (kernels), the CPU
//!   backends (reference), `Autodiff<B>` (`autodiff`: one node; the backward needs only the
//!   saved `probs`) and `Fusion<B>` (`fusion`: one custom operation);
//! - [`counters`]: launch counters that prove the fused path ran.

mod autodiff;
mod backends;
pub mod counters;
mod fusion;
mod kernel;
pub mod launch;
pub mod reference;

pub use counters::{window_softmax_backward_launches, window_softmax_forward_launches};
pub use launch::{window_softmax_backward_cube, window_softmax_forward_cube};
pub use reference::{
    relative_position_bias_table_grad, window_softmax_backward_reference, window_softmax_reference,
};

use burn::tensor::backend::Backend;
use burn::tensor::ops::{FloatTensor, IntTensor};
use burn::tensor::{Int, Tensor, TensorMetadata, TensorPrimitive};
#[cfg(doc)]
use burn_cubecl::{CubeBackend, tensor::CubeTensor};

use crate::fallback::{narrow, widen};

/// A backend that can run Swin's window-attention softmax (relative position bias gathered
/// from its table, shifted-window mask, softmax) as one fused operation.
///
/// Shapes as in the [module docs](self); `table` and `mask` in the dtype of `scores`
/// (precondition, checked by the fused path). The provided methods compute with the
/// plain-Burn [`reference`](mod@reference) (half precision widened to f32), so any backend can
/// opt in with an empty `impl`; [`CubeBackend`] overrides them with the CubeCL kernels.
pub trait SwinAttentionKernel: Backend {
    /// `softmax(scores + table[index] + mask)` → `[windows, heads, n, n]`, dtype of `scores`.
    fn fused_window_softmax(
        scores: FloatTensor<Self>,
        table: FloatTensor<Self>,
        index: IntTensor<Self>,
        mask: Option<FloatTensor<Self>>,
    ) -> FloatTensor<Self> {
        let (shape, dtype) = (scores.shape(), scores.dtype());
        let probs = window_softmax_reference::<Self>(
            widen::<Self, 4>(scores),
            widen::<Self, 2>(table),
            Tensor::<Self, 1, Int>::from_primitive(index),
            mask.map(widen::<Self, 3>),
        );
        narrow(probs, dtype, shape)
    }

    /// `dscores = probs ⊙ (grad_probs − Σ_k grad_probs ⊙ probs)` from the probabilities the
    /// forward returned and their upstream gradient (both `[windows, heads, n, n]`), in the
    /// dtype of `probs`.
    fn fused_window_softmax_backward(
        probs: FloatTensor<Self>,
        grad_probs: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        let (shape, dtype) = (probs.shape(), probs.dtype());
        let dscores = window_softmax_backward_reference::<Self>(
            widen::<Self, 4>(probs),
            widen::<Self, 4>(grad_probs),
        );
        narrow(dscores, dtype, shape)
    }
}

/// `softmax(scores + table[index] + mask)` over the last dimension (see the [module
/// docs](self)): `scores: [windows, heads, n, n]`, `table: [offsets, heads]`, `index: [n · n]`,
/// `mask: [num_windows, n, n]` → like `scores`. Runs the backend's fused kernel where it has
/// one (CubeCL), else the plain-Burn [`reference`](mod@reference); differentiable on
/// `Autodiff<B>` with respect to `scores` and `table` as one graph node (the mask is a
/// constant).
pub fn window_softmax<B: SwinAttentionKernel>(
    scores: Tensor<B, 4>,
    table: Tensor<B, 2>,
    index: Tensor<B, 1, Int>,
    mask: Option<Tensor<B, 3>>,
) -> Tensor<B, 4> {
    Tensor::from_primitive(TensorPrimitive::Float(B::fused_window_softmax(
        scores.into_primitive().tensor(),
        table.into_primitive().tensor(),
        index.into_primitive(),
        mask.map(|m| m.into_primitive().tensor()),
    )))
}
