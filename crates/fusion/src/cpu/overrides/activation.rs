//! `gelu` and `gelu_backward` (exact, erf) in f32 as burnacc's multi-threaded GELU kernel
//! (`GeluKernel` for `CpuFlex`, without a bias; counted there); other dtypes as Flex's
//! single-threaded loop.

use crate::cpu::CpuFlex;
use burn::backend::Flex;
use burn::backend::flex::FlexTensor;
use burn::tensor::DType;
use burn::tensor::ops::ActivationOps;
use burnacc_kernels::gelu::GeluKernel;

/// `x · Φ(x)`, any shape.
pub fn gelu(x: FlexTensor) -> FlexTensor {
    match x.dtype() {
        DType::F32 => CpuFlex::fused_bias_gelu(x, None),
        _ => Flex::gelu(x),
    }
}

/// `grad · (Φ(x) + x · φ(x))`, `x` and `grad` of one shape.
pub fn gelu_backward(x: FlexTensor, grad: FlexTensor) -> FlexTensor {
    match (x.dtype(), grad.dtype()) {
        (DType::F32, DType::F32) => CpuFlex::fused_bias_gelu_backward(x, None, grad).0,
        _ => Flex::gelu_backward(x, grad),
    }
}
