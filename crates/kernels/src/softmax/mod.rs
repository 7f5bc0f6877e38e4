//! Softmax as one autodiff node with the analytic backward:
//!
//! ```text
//! y = softmax(x) over `dim`
//! dx = y ⊙ (dy − Σ_dim dy ⊙ y)
//! ```
//!
//! Burn 0.21's `Autodiff` has no softmax of its own: it records the five ops of the default
//! (`max_dim`, `sub`, `exp`, `sum_dim`, `div`) and differentiates each, which makes the
//! backward half a dozen passes over the tensor plus the broadcast reductions of `sub` and
//! `div`. Attention's softmax (BERT's `[batch, heads, tokens, tokens]` scores) is the largest
//! activation of a transformer layer, so those passes are most of its element-wise work.
//! Here the forward is the inner backend's own `softmax` (Flex's one multi-threaded pass per
//! row on the CPU; Burn's fused reductions under CubeCL fusion), recorded as one node that
//! keeps only `y`, and the backward is one pass: for the last dimension, the window-softmax
//! backward kernel of [`crate::swin_attention`] (the same `y ⊙ (dy − Σ dy ⊙ y)` per row of
//! any width: CubeCL on CubeCL devices, burnacc's loop on its CPU backend); for another
//! dimension, plain Burn ops.
//!
//! Dtypes: the result is in the dtype of `x`; the backward computes in f32 for f32 and
//! narrower tensors (the window-softmax backward widens), in f64 for f64.
//!
//! - [`SoftmaxKernel`]: the backend extension, implemented by every backend that has the
//!   window-softmax backward (`backends`), and by `Autodiff<B>` as the node (`autodiff`);
//! - [`softmax`]: the tensor-level function.

mod autodiff;
mod backends;

use burn::tensor::ops::FloatTensor;
use burn::tensor::{Shape, Tensor, TensorMetadata, TensorPrimitive};

use crate::swin_attention::SwinAttentionKernel;

/// A backend whose softmax can be differentiated as one node (see the [module docs](self)).
///
/// The provided methods are the maths on any backend with the window-softmax backward; only
/// `Autodiff<B>` overrides them, to record the node.
pub trait SoftmaxKernel: SwinAttentionKernel {
    /// `softmax(x)` over `dim`, like `x`: the backend's own softmax.
    fn fused_softmax(x: FloatTensor<Self>, dim: usize) -> FloatTensor<Self> {
        Self::softmax(x, dim)
    }

    /// `dx = y ⊙ (dy − Σ_dim dy ⊙ y)` from the forward's result `y` and its upstream gradient
    /// `dy` (same shape), in the dtype of `y`: one pass per row of the window-softmax backward
    /// when `dim` is the last dimension, plain Burn ops otherwise.
    fn fused_softmax_backward(
        y: FloatTensor<Self>,
        dy: FloatTensor<Self>,
        dim: usize,
    ) -> FloatTensor<Self> {
        let shape = y.shape();
        let rank = shape.num_dims();
        if shape.num_elements() == 0 {
            return y;
        }
        if dim + 1 == rank {
            // The window-softmax backward reads rows of `n` (its plain-Burn reference takes
            // 4-D tensors): any row count fits as `[1, 1, rows, n]`.
            let width = shape[rank - 1];
            let rows = Shape::new([1, 1, shape.num_elements() / width, width]);
            let dx = Self::fused_window_softmax_backward(
                Self::float_reshape(y, rows.clone()),
                Self::float_reshape(dy, rows),
            );
            return Self::float_reshape(dx, shape);
        }
        let dot = Self::float_sum_dim(Self::float_mul(dy.clone(), y.clone()), dim);
        Self::float_mul(y, Self::float_sub(dy, dot))
    }
}

/// `softmax(x)` over `dim`, like `x`; on `Autodiff<B>` one graph node whose backward is
/// [`SoftmaxKernel::fused_softmax_backward`].
pub fn softmax<B: SoftmaxKernel, const D: usize>(x: Tensor<B, D>, dim: usize) -> Tensor<B, D> {
    assert!(dim < D, "softmax: dim {dim} of a tensor of rank {D}");
    Tensor::from_primitive(TensorPrimitive::Float(B::fused_softmax(
        x.into_primitive().tensor(),
        dim,
    )))
}
