//! Moves backend-parametrised wrapper types between `CpuFlex` and Flex.
//!
//! The primitives inside are the same types, so each conversion only re-labels the wrapper;
//! nothing is copied.

use super::CpuFlex;
use burn::backend::Flex;
use burn::tensor::TensorPrimitive;
use burn::tensor::ops::{
    DeformConv2dBackward, MaxPool1dBackward, MaxPool1dWithIndices, MaxPool2dBackward,
    MaxPool2dWithIndices, TransactionPrimitive,
};
use burn::tensor::quantization::QuantizationParametersPrimitive;

pub(crate) fn tp_in(t: TensorPrimitive<CpuFlex>) -> TensorPrimitive<Flex> {
    match t {
        TensorPrimitive::Float(t) => TensorPrimitive::Float(t),
        TensorPrimitive::QFloat(t) => TensorPrimitive::QFloat(t),
    }
}

pub(crate) fn tp_out(t: TensorPrimitive<Flex>) -> TensorPrimitive<CpuFlex> {
    match t {
        TensorPrimitive::Float(t) => TensorPrimitive::Float(t),
        TensorPrimitive::QFloat(t) => TensorPrimitive::QFloat(t),
    }
}

pub(crate) fn qparams_in(
    q: QuantizationParametersPrimitive<CpuFlex>,
) -> QuantizationParametersPrimitive<Flex> {
    QuantizationParametersPrimitive { scales: q.scales }
}

pub(crate) fn transaction_in(t: TransactionPrimitive<CpuFlex>) -> TransactionPrimitive<Flex> {
    TransactionPrimitive::new(t.read_floats, t.read_qfloats, t.read_ints, t.read_bools)
}

pub(crate) fn max_pool1d_out(o: MaxPool1dWithIndices<Flex>) -> MaxPool1dWithIndices<CpuFlex> {
    MaxPool1dWithIndices::new(o.output, o.indices)
}

pub(crate) fn max_pool2d_out(o: MaxPool2dWithIndices<Flex>) -> MaxPool2dWithIndices<CpuFlex> {
    MaxPool2dWithIndices::new(o.output, o.indices)
}

pub(crate) fn max_pool1d_backward_out(o: MaxPool1dBackward<Flex>) -> MaxPool1dBackward<CpuFlex> {
    MaxPool1dBackward::new(o.x_grad)
}

pub(crate) fn max_pool2d_backward_out(o: MaxPool2dBackward<Flex>) -> MaxPool2dBackward<CpuFlex> {
    MaxPool2dBackward::new(o.x_grad)
}

pub(crate) fn deform_conv2d_backward_out(
    o: DeformConv2dBackward<Flex>,
) -> DeformConv2dBackward<CpuFlex> {
    DeformConv2dBackward::new(
        o.x_grad,
        o.offset_grad,
        o.weight_grad,
        o.mask_grad,
        o.bias_grad,
    )
}
