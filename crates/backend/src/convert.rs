//! Moves backend-parametrised wrapper types between `Acc<B>` and `B`.
//!
//! The primitives inside are the same types (`Acc<B>` reuses `B`'s), so each conversion only
//! re-labels the wrapper; nothing is copied.

use crate::Acc;
use burn::tensor::TensorPrimitive;
use burn::tensor::backend::Backend;
use burn::tensor::ops::{
    DeformConv2dBackward, MaxPool1dBackward, MaxPool1dWithIndices, MaxPool2dBackward,
    MaxPool2dWithIndices, TransactionPrimitive,
};
use burn::tensor::quantization::QuantizationParametersPrimitive;

pub(crate) fn tp_in<B: Backend>(t: TensorPrimitive<Acc<B>>) -> TensorPrimitive<B> {
    match t {
        TensorPrimitive::Float(t) => TensorPrimitive::Float(t),
        TensorPrimitive::QFloat(t) => TensorPrimitive::QFloat(t),
    }
}

pub(crate) fn tp_out<B: Backend>(t: TensorPrimitive<B>) -> TensorPrimitive<Acc<B>> {
    match t {
        TensorPrimitive::Float(t) => TensorPrimitive::Float(t),
        TensorPrimitive::QFloat(t) => TensorPrimitive::QFloat(t),
    }
}

pub(crate) fn qparams_in<B: Backend>(
    q: QuantizationParametersPrimitive<Acc<B>>,
) -> QuantizationParametersPrimitive<B> {
    QuantizationParametersPrimitive { scales: q.scales }
}

pub(crate) fn transaction_in<B: Backend>(
    t: TransactionPrimitive<Acc<B>>,
) -> TransactionPrimitive<B> {
    // The read order lives outside the primitive (`execute_async` takes it out before calling
    // `tr_execute`), so the four lists are all there is to move.
    TransactionPrimitive::new(t.read_floats, t.read_qfloats, t.read_ints, t.read_bools)
}

pub(crate) fn max_pool1d_out<B: Backend>(
    o: MaxPool1dWithIndices<B>,
) -> MaxPool1dWithIndices<Acc<B>> {
    MaxPool1dWithIndices::new(o.output, o.indices)
}

pub(crate) fn max_pool2d_out<B: Backend>(
    o: MaxPool2dWithIndices<B>,
) -> MaxPool2dWithIndices<Acc<B>> {
    MaxPool2dWithIndices::new(o.output, o.indices)
}

pub(crate) fn max_pool1d_backward_out<B: Backend>(
    o: MaxPool1dBackward<B>,
) -> MaxPool1dBackward<Acc<B>> {
    MaxPool1dBackward::new(o.x_grad)
}

pub(crate) fn max_pool2d_backward_out<B: Backend>(
    o: MaxPool2dBackward<B>,
) -> MaxPool2dBackward<Acc<B>> {
    MaxPool2dBackward::new(o.x_grad)
}

pub(crate) fn deform_conv2d_backward_out<B: Backend>(
    o: DeformConv2dBackward<B>,
) -> DeformConv2dBackward<Acc<B>> {
    DeformConv2dBackward::new(
        o.x_grad,
        o.offset_grad,
        o.weight_grad,
        o.mask_grad,
        o.bias_grad,
    )
}
