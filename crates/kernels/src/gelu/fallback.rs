//! Plumbing of the reference (default) path of [`super::GeluKernel`]: primitives of any rank in
//! and out, flattened to `[len]` or `[rows, width]`, and half-precision storage widened to f32
//! so that the reference computes in f32 like the kernels do.

use burn::tensor::backend::Backend;
use burn::tensor::ops::FloatTensor;
use burn::tensor::{DType, Shape, Tensor, TensorMetadata, TensorPrimitive};

/// The dtype the reference path computes in: f32 for half-precision storage, else the input's.
fn accumulation_dtype(dtype: DType) -> DType {
    match dtype {
        DType::F16 | DType::BF16 => DType::F32,
        other => other,
    }
}

/// Wraps a primitive as a tensor in the accumulation dtype.
fn widen<B: Backend, const D: usize>(tensor: FloatTensor<B>) -> Tensor<B, D> {
    let dtype = accumulation_dtype(tensor.dtype());
    Tensor::<B, D>::from_primitive(TensorPrimitive::Float(tensor)).cast(dtype)
}

/// Any-rank primitive → `[len]` tensor in the accumulation dtype.
pub(super) fn flat<B: Backend>(x: FloatTensor<B>) -> Tensor<B, 1> {
    let len = x.shape().num_elements();
    widen::<B, 1>(B::float_reshape(x, Shape::new([len])))
}

/// `[..., width]` primitive → `[rows, width]` tensor in the accumulation dtype.
pub(super) fn as_rows<B: Backend>(x: FloatTensor<B>) -> Tensor<B, 2> {
    let shape = x.shape();
    let width = shape[shape.num_dims() - 1];
    let rows = shape.num_elements() / width.max(1);
    // A zero width leaves the row count undetermined by the element count; take it from the
    // leading dimensions instead.
    let rows = if width == 0 {
        shape.as_slice()[..shape.num_dims() - 1].iter().product()
    } else {
        rows
    };
    widen::<B, 2>(B::float_reshape(x, Shape::new([rows, width])))
}

/// `[width]` primitive → tensor in the accumulation dtype.
pub(super) fn vector<B: Backend>(bias: FloatTensor<B>) -> Tensor<B, 1> {
    widen::<B, 1>(bias)
}

/// Back to the storage dtype and the caller's shape.
pub(super) fn narrow<B: Backend, const D: usize>(
    t: Tensor<B, D>,
    dtype: DType,
    shape: Shape,
) -> FloatTensor<B> {
    B::float_reshape(t.cast(dtype).into_primitive().tensor(), shape)
}
