//! The convolution backward: f32 with groups = 1 as one matrix product each
//! ([`crate::kernels::conv_backward`]); other convolutions as Flex (Burn's default).

use crate::counters::{CONV2D_WEIGHT_BACKWARD, CONV2D_X_BACKWARD};
use crate::kernels::conv_backward::{conv2d_weight_backward_f32, conv2d_x_backward_f32, takes};
use burn::backend::Flex;
use burn::backend::flex::FlexTensor;
use burn::tensor::ops::{ConvOptions, ModuleOps};

/// `∂L/∂x` of `conv2d`: x `[N, C_in, H, W]`, weight `[C_out, C_in/groups, kh, kw]`,
/// output_grad `[N, C_out, Ho, Wo]` → like x.
pub fn conv2d_x_backward(
    x: FlexTensor,
    weight: FlexTensor,
    output_grad: FlexTensor,
    options: ConvOptions<2>,
) -> FlexTensor {
    if takes(&x, &weight, &output_grad, &options) {
        CONV2D_X_BACKWARD.bump();
        conv2d_x_backward_f32(&x, weight, output_grad, &options)
    } else {
        Flex::conv2d_x_backward(x, weight, output_grad, options)
    }
}

/// `∂L/∂weight` of `conv2d`: → like weight.
pub fn conv2d_weight_backward(
    x: FlexTensor,
    weight: FlexTensor,
    output_grad: FlexTensor,
    options: ConvOptions<2>,
) -> FlexTensor {
    if takes(&x, &weight, &output_grad, &options) {
        CONV2D_WEIGHT_BACKWARD.bump();
        conv2d_weight_backward_f32(x, &weight, output_grad, &options)
    } else {
        Flex::conv2d_weight_backward(x, weight, output_grad, options)
    }
}
