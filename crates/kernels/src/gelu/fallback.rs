//! Plumbing of the reference (default) path of [`super::GeluKernel`] beyond the crate's shared
//! one (`crate::fallback`, re-exported here): primitives of any rank flattened to `[len]`, and
//! the bias as a vector.

use burn::tensor::backend::Backend;
use burn::tensor::ops::FloatTensor;
use burn::tensor::{Shape, Tensor, TensorMetadata};

use crate::fallback::widen;
pub(super) use crate::fallback::{as_rows, narrow};

/// Any-rank primitive → `[len]` tensor in the accumulation dtype.
pub(super) fn flat<B: Backend>(x: FloatTensor<B>) -> Tensor<B, 1> {
    let len = x.shape().num_elements();
    widen::<B, 1>(B::float_reshape(x, Shape::new([len])))
}

/// `[width]` primitive → tensor in the accumulation dtype.
pub(super) fn vector<B: Backend>(bias: FloatTensor<B>) -> Tensor<B, 1> {
    widen::<B, 1>(bias)
}
