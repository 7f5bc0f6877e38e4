//! `float_add`, `float_sub`, `float_mul`, `float_div`: broadcast or strided f32 operands run
//! [`crate::kernels::binary`]; the rest Flex's SIMD kernels (in place when they can).

use crate::counters::BROADCAST_BINARY;
use crate::kernels::binary::{BinaryOp, binary_f32, takes};
use burn::backend::Flex;
use burn::backend::flex::FlexTensor;
use burn::tensor::ops::FloatTensorOps;

fn binary(
    lhs: FlexTensor,
    rhs: FlexTensor,
    op: BinaryOp,
    flex: fn(FlexTensor, FlexTensor) -> FlexTensor,
) -> FlexTensor {
    if takes(&lhs, &rhs) {
        BROADCAST_BINARY.bump();
        binary_f32(&lhs, &rhs, op)
    } else {
        flex(lhs, rhs)
    }
}

/// `lhs + rhs`, broadcasting.
pub fn float_add(lhs: FlexTensor, rhs: FlexTensor) -> FlexTensor {
    binary(lhs, rhs, BinaryOp::Add, Flex::float_add)
}

/// `lhs − rhs`, broadcasting.
pub fn float_sub(lhs: FlexTensor, rhs: FlexTensor) -> FlexTensor {
    binary(lhs, rhs, BinaryOp::Sub, Flex::float_sub)
}

/// `lhs · rhs`, broadcasting.
pub fn float_mul(lhs: FlexTensor, rhs: FlexTensor) -> FlexTensor {
    binary(lhs, rhs, BinaryOp::Mul, Flex::float_mul)
}

/// `lhs / rhs`, broadcasting.
pub fn float_div(lhs: FlexTensor, rhs: FlexTensor) -> FlexTensor {
    binary(lhs, rhs, BinaryOp::Div, Flex::float_div)
}
