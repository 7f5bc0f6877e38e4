//! `float_{add,sub,mul,div}_scalar` on f32 tensors that are not contiguous (views: a permuted,
//! sliced or reshaped-as-view tensor, such as attention's `q` before its scaling) through
//! burnacc's strided binary kernel, the scalar broadcast as a one-element tensor: rows of
//! contiguous runs, over both cores, instead of Flex's per-element index iterator. Contiguous
//! tensors and other dtypes keep Flex's SIMD loops (in place when they can).

use crate::counters::STRIDED_SCALAR;
use crate::kernels::binary::{BinaryOp, binary_f32};
use burn::backend::Flex;
use burn::backend::flex::FlexTensor;
use burn::tensor::ops::FloatTensorOps;
use burn::tensor::{DType, Scalar, Shape};

fn scalar(
    lhs: FlexTensor,
    rhs: Scalar,
    op: BinaryOp,
    flex: fn(FlexTensor, Scalar) -> FlexTensor,
) -> FlexTensor {
    if lhs.dtype() != DType::F32 || lhs.layout().contiguous_offsets().is_some() {
        return flex(lhs, rhs);
    }
    STRIDED_SCALAR.bump();
    let ones = Shape::from(vec![1; lhs.layout().num_dims()]);
    let value = FlexTensor::filled_typed(ones, DType::F32, rhs.elem::<f32>());
    binary_f32(&lhs, &value, op)
}

/// `lhs + rhs`.
pub fn float_add_scalar(lhs: FlexTensor, rhs: Scalar) -> FlexTensor {
    scalar(lhs, rhs, BinaryOp::Add, Flex::float_add_scalar)
}

/// `lhs − rhs`.
pub fn float_sub_scalar(lhs: FlexTensor, rhs: Scalar) -> FlexTensor {
    scalar(lhs, rhs, BinaryOp::Sub, Flex::float_sub_scalar)
}

/// `lhs · rhs`.
pub fn float_mul_scalar(lhs: FlexTensor, rhs: Scalar) -> FlexTensor {
    scalar(lhs, rhs, BinaryOp::Mul, Flex::float_mul_scalar)
}

/// `lhs / rhs`.
pub fn float_div_scalar(lhs: FlexTensor, rhs: Scalar) -> FlexTensor {
    scalar(lhs, rhs, BinaryOp::Div, Flex::float_div_scalar)
}
