//! `nn::Linear`'s op and its backward on `CpuFlex`'s own ops. Burn's default decompositions
//! called through Flex would run Flex's products (outputs zero-filled and copied, one product
//! per batch matrix) instead of burnacc's; and its weight gradient is one product per batch
//! matrix followed by a sum over the batch, where one product over every position gives the
//! sum directly.
//!
//! Shapes: `x [.., in]`, `weight [in, out]`, `bias [out]`, `output_grad [.., out]`, any
//! number of leading dimensions (the same for `x` and `output_grad`). Any float dtype: the
//! ops below keep their own f32-or-Flex choice.

use super::{float_add, float_matmul, float_reshape};
use crate::counters::LINEAR_WEIGHT_GRAD;
use burn::backend::Flex;
use burn::backend::flex::FlexTensor;
use burn::tensor::Shape;
use burn::tensor::ops::FloatTensorOps;

/// `x · weight [+ bias]`.
pub fn linear(x: FlexTensor, weight: FlexTensor, bias: Option<FlexTensor>) -> FlexTensor {
    let rank = x.layout().num_dims();
    let output = float_matmul(x, unsqueeze_leading(weight, rank));
    match bias {
        Some(bias) => float_add(output, unsqueeze_leading(bias, rank)),
        None => output,
    }
}

/// `output_grad · weightᵀ`: the gradient of `x`.
pub fn linear_x_backward(weight: FlexTensor, output_grad: FlexTensor) -> FlexTensor {
    let rank = output_grad.layout().num_dims();
    let weight_t = Flex::float_swap_dims(weight, 0, 1);
    float_matmul(output_grad, unsqueeze_leading(weight_t, rank))
}

/// `xᵀ · output_grad` summed over every leading position: one `[in, P] × [P, out]` product,
/// `P` the number of positions.
pub fn linear_weight_backward(x: FlexTensor, output_grad: FlexTensor) -> FlexTensor {
    LINEAR_WEIGHT_GRAD.bump();
    let x = as_rows(x);
    let output_grad = as_rows(output_grad);
    float_matmul(Flex::float_swap_dims(x, 0, 1), output_grad)
}

/// `output_grad` summed over every leading position: the gradient of `bias`, `[out]`.
pub fn linear_bias_backward(output_grad: FlexTensor) -> FlexTensor {
    let features = last_dim(&output_grad);
    let summed = Flex::float_sum_dim(as_rows(output_grad), 0);
    float_reshape(summed, Shape::from(vec![features]))
}

/// `t` as `[positions, last dimension]` (a view where the strides allow).
fn as_rows(t: FlexTensor) -> FlexTensor {
    let features = last_dim(&t);
    let positions = t.layout().num_elements() / features.max(1);
    float_reshape(t, Shape::from(vec![positions, features]))
}

fn last_dim(t: &FlexTensor) -> usize {
    let shape = t.layout().shape();
    shape[shape.num_dims() - 1]
}

/// `t` with size-1 dimensions prepended up to `rank` (a view).
fn unsqueeze_leading(t: FlexTensor, rank: usize) -> FlexTensor {
    let shape = t.layout().shape();
    let own = shape.num_dims();
    if own >= rank {
        return t;
    }
    let mut dims = vec![1usize; rank - own];
    dims.extend((0..own).map(|d| shape[d]));
    float_reshape(t, Shape::from(dims))
}
