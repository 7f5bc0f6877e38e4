//! The gradients of `nn::Linear`'s weight and bias on `CpuFlex`'s own ops. Burn's default
//! weight gradient is one product per batch matrix followed by a sum over the batch, where one
//! product over every position gives the sum directly. (The forward and the input gradient are
//! Burn's defaults, which `CpuFlex` runs on its own products: `FLEX_DEFAULTS` of
//! scripts/gen_forwarding.py. Called through Flex they ran Flex's products, whose outputs are
//! zero-filled and copied.)
//!
//! Shapes: `x [.., in]`, `weight [in, out]`, `bias [out]`, `output_grad [.., out]`, any
//! number of leading dimensions (the same for `x` and `output_grad`). Any float dtype: the
//! ops below keep their own f32-or-Flex choice.

use super::{float_matmul, float_reshape};
use crate::counters::LINEAR_WEIGHT_GRAD;
use burn::backend::Flex;
use burn::backend::flex::FlexTensor;
use burn::tensor::Shape;
use burn::tensor::ops::FloatTensorOps;

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
