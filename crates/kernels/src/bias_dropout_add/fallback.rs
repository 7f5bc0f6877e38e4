//! Plumbing of the reference (default) path of [`super::BiasDropoutAddKernel`]: primitives in
//! and out, the seed tensor read back to the host, and half-precision storage widened to f32
//! so that the reference computes in f32 like the kernels do.

use burn::tensor::backend::Backend;
use burn::tensor::ops::{FloatTensor, IntTensor};
use burn::tensor::{DType, Int, Shape, Tensor, TensorMetadata, TensorPrimitive};

use super::seed::DropoutSeed;

/// The host value of the seed tensor, for the host mask. Reads it back (a synchronisation):
/// only the CPU backends take the reference path, where that costs nothing. At `p = 0` nothing
/// is read (there is no mask) and the seed may be absent; without one at `p > 0`, panics.
pub(super) fn read_seed<B: Backend>(seed: Option<IntTensor<B>>, p: f64) -> DropoutSeed {
    if p == 0.0 {
        return DropoutSeed::default();
    }
    let seed = seed
        .unwrap_or_else(|| panic!("bias_dropout_add: dropout with p = {p} needs a seed tensor"));
    DropoutSeed::from_tensor(Tensor::<B, 1, Int>::from_primitive(seed))
}

/// The dtype the reference path computes in: f32 for half-precision storage, else the input's.
fn accumulation_dtype(dtype: DType) -> DType {
    match dtype {
        DType::F16 | DType::BF16 => DType::F32,
        other => other,
    }
}

/// Wraps a primitive as a tensor in the accumulation dtype.
pub(super) fn widen<B: Backend, const D: usize>(tensor: FloatTensor<B>) -> Tensor<B, D> {
    let dtype = accumulation_dtype(tensor.dtype());
    Tensor::<B, D>::from_primitive(TensorPrimitive::Float(tensor)).cast(dtype)
}

/// `[..., width]` primitive → `[rows, width]` tensor in the accumulation dtype. Row-major
/// flattening keeps every element's linear index, hence its mask bit.
pub(super) fn as_rows<B: Backend>(x: FloatTensor<B>) -> Tensor<B, 2> {
    let shape = x.shape();
    let width = shape[shape.num_dims() - 1];
    let rows = shape.num_elements() / width.max(1);
    let x = B::float_reshape(x, Shape::new([rows, width]));
    widen::<B, 2>(x)
}

/// Back to the storage dtype and the caller's shape.
pub(super) fn narrow<B: Backend, const D: usize>(
    t: Tensor<B, D>,
    dtype: DType,
    shape: Shape,
) -> FloatTensor<B> {
    B::float_reshape(t.cast(dtype).into_primitive().tensor(), shape)
}
