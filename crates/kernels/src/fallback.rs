//! Plumbing shared by the kernels' reference (default) paths: primitives in and out,
//! `[..., width]` flattened to `[rows, width]`, and half-precision storage widened to f32 so that
//! the references accumulate in f32 like the kernels do.

use burn::tensor::backend::Backend;
use burn::tensor::ops::FloatTensor;
use burn::tensor::{DType, Shape, Tensor, TensorMetadata, TensorPrimitive};

/// The dtype the reference paths compute in: f32 for half-precision storage, else the input's.
fn accumulation_dtype(dtype: DType) -> DType {
    match dtype {
        DType::F16 | DType::BF16 => DType::F32,
        other => other,
    }
}

/// Wraps a primitive as a tensor in the accumulation dtype.
pub(crate) fn widen<B: Backend, const D: usize>(tensor: FloatTensor<B>) -> Tensor<B, D> {
    let dtype = accumulation_dtype(tensor.dtype());
    Tensor::<B, D>::from_primitive(TensorPrimitive::Float(tensor)).cast(dtype)
}

/// `[..., width]` primitive → `[rows, width]` tensor in the accumulation dtype. Row-major
/// flattening keeps every element's linear index.
pub(crate) fn as_rows<B: Backend>(x: FloatTensor<B>) -> Tensor<B, 2> {
    let shape = x.shape();
    let width = shape[shape.num_dims() - 1];
    // A zero width leaves the row count undetermined by the element count; it is taken from
    // the leading dimensions.
    let rows = shape.as_slice()[..shape.num_dims() - 1].iter().product();
    widen::<B, 2>(B::float_reshape(x, Shape::new([rows, width])))
}

/// Back to the storage dtype and the caller's shape.
pub(crate) fn narrow<B: Backend, const D: usize>(
    t: Tensor<B, D>,
    dtype: DType,
    shape: Shape,
) -> FloatTensor<B> {
    B::float_reshape(t.cast(dtype).into_primitive().tensor(), shape)
}
