//! Moves Burn's backend-parametrised wrapper types (`TensorPrimitive<B>`,
//! `MaxPool2dWithIndices<B>`, …, and burnacc's optimizer groups) between two backends that store the same tensor types:
//! burnacc's backends and the backends they forward to (`CpuFlex` and Flex, `CubeAcc<R>` and
//! `CubeBackend<R, f32, i32, u32>`).
//!
//! The primitives inside are the same values, so each conversion only re-labels the wrapper;
//! nothing is copied.

use burn::tensor::TensorPrimitive;
use burn::tensor::backend::Backend;
use burn::tensor::ops::{
    DeformConv2dBackward, MaxPool1dBackward, MaxPool1dWithIndices, MaxPool2dBackward,
    MaxPool2dWithIndices, TransactionPrimitive,
};
use burn::tensor::quantization::QuantizationParametersPrimitive;
use burnacc_kernels::optim::{AdamGroup, AdamUpdate, SgdGroup, SgdUpdate};

/// A backend whose float, int, bool and quantized tensors are those of `From`.
pub(crate) trait SamePrimitives<From: Backend>:
    Backend<
        FloatTensorPrimitive = From::FloatTensorPrimitive,
        IntTensorPrimitive = From::IntTensorPrimitive,
        BoolTensorPrimitive = From::BoolTensorPrimitive,
        QuantizedTensorPrimitive = From::QuantizedTensorPrimitive,
    >
{
}

impl<From: Backend, To> SamePrimitives<From> for To where
    To: Backend<
            FloatTensorPrimitive = From::FloatTensorPrimitive,
            IntTensorPrimitive = From::IntTensorPrimitive,
            BoolTensorPrimitive = From::BoolTensorPrimitive,
            QuantizedTensorPrimitive = From::QuantizedTensorPrimitive,
        >
{
}

pub(crate) fn tensor_primitive<F: Backend, T: SamePrimitives<F>>(
    t: TensorPrimitive<F>,
) -> TensorPrimitive<T> {
    match t {
        TensorPrimitive::Float(t) => TensorPrimitive::Float(t),
        TensorPrimitive::QFloat(t) => TensorPrimitive::QFloat(t),
    }
}

pub(crate) fn qparams<F: Backend, T: SamePrimitives<F>>(
    q: QuantizationParametersPrimitive<F>,
) -> QuantizationParametersPrimitive<T> {
    QuantizationParametersPrimitive { scales: q.scales }
}

pub(crate) fn transaction<F: Backend, T: SamePrimitives<F>>(
    t: TransactionPrimitive<F>,
) -> TransactionPrimitive<T> {
    TransactionPrimitive::new(t.read_floats, t.read_qfloats, t.read_ints, t.read_bools)
}

pub(crate) fn max_pool1d<F: Backend, T: SamePrimitives<F>>(
    o: MaxPool1dWithIndices<F>,
) -> MaxPool1dWithIndices<T> {
    MaxPool1dWithIndices::new(o.output, o.indices)
}

pub(crate) fn max_pool2d<F: Backend, T: SamePrimitives<F>>(
    o: MaxPool2dWithIndices<F>,
) -> MaxPool2dWithIndices<T> {
    MaxPool2dWithIndices::new(o.output, o.indices)
}

pub(crate) fn max_pool1d_backward<F: Backend, T: SamePrimitives<F>>(
    o: MaxPool1dBackward<F>,
) -> MaxPool1dBackward<T> {
    MaxPool1dBackward::new(o.x_grad)
}

pub(crate) fn max_pool2d_backward<F: Backend, T: SamePrimitives<F>>(
    o: MaxPool2dBackward<F>,
) -> MaxPool2dBackward<T> {
    MaxPool2dBackward::new(o.x_grad)
}

pub(crate) fn deform_conv2d_backward<F: Backend, T: SamePrimitives<F>>(
    o: DeformConv2dBackward<F>,
) -> DeformConv2dBackward<T> {
    DeformConv2dBackward::new(
        o.x_grad,
        o.offset_grad,
        o.weight_grad,
        o.mask_grad,
        o.bias_grad,
    )
}

pub(crate) fn adam_group<F: Backend, T: SamePrimitives<F>>(g: AdamGroup<F>) -> AdamGroup<T> {
    AdamGroup {
        params: g.params,
        grads: g.grads,
        exp_avg: g.exp_avg,
        exp_avg_sq: g.exp_avg_sq,
        step_size: g.step_size,
        bc2_sqrt: g.bc2_sqrt,
    }
}

pub(crate) fn adam_update<F: Backend, T: SamePrimitives<F>>(u: AdamUpdate<F>) -> AdamUpdate<T> {
    AdamUpdate {
        params: u.params,
        exp_avg: u.exp_avg,
        exp_avg_sq: u.exp_avg_sq,
    }
}

pub(crate) fn sgd_group<F: Backend, T: SamePrimitives<F>>(g: SgdGroup<F>) -> SgdGroup<T> {
    SgdGroup {
        params: g.params,
        grads: g.grads,
        momentum_buffer: g.momentum_buffer,
        first: g.first,
    }
}

pub(crate) fn sgd_update<F: Backend, T: SamePrimitives<F>>(u: SgdUpdate<F>) -> SgdUpdate<T> {
    SgdUpdate {
        params: u.params,
        momentum_buffer: u.momentum_buffer,
    }
}
