//! [`DcnKernel`] for Burn's backends: burnacc's backward for [`CubeBackend`]; Burn's own for the
//! CPU backends (the trait's provided methods); `Fusion<B>` records the backward as one custom
//! operation running `B`'s; `Acc<B>` passes its calls to `B` (same primitives). `Autodiff<B>`
//! is in `autodiff`.

use burn::backend::ndarray::{
    FloatNdArrayElement, IntNdArrayElement, NdArrayTensor, QuantElement, SharedArray,
};
use burn::backend::{Flex, NdArray};
use burn::tensor::ops::{DeformConv2dBackward, DeformConvOptions, FloatTensor};
use burn_cubecl::tensor::CubeTensor;
use burn_cubecl::{BoolElement, CubeBackend, CubeRuntime, FloatElement, IntElement};
use burn_fusion::{Fusion, FusionBackend};
use burnacc_backend::Acc;

use super::DcnKernel;
use super::launch::deform_conv2d_backward_cube;
use crate::custom_op::{InnerCall, RecordedInputs, like, record};

impl<R, F, I, BT> DcnKernel for CubeBackend<R, F, I, BT>
where
    R: CubeRuntime,
    F: FloatElement,
    I: IntElement,
    BT: BoolElement,
{
    fn dcn_backward(
        x: CubeTensor<R>,
        offset: CubeTensor<R>,
        weight: CubeTensor<R>,
        mask: Option<CubeTensor<R>>,
        bias: Option<CubeTensor<R>>,
        grad_out: CubeTensor<R>,
        options: DeformConvOptions<2>,
    ) -> DeformConv2dBackward<Self> {
        deform_conv2d_backward_cube(x, offset, weight, mask, bias, grad_out, &options)
    }
}

/// Burn's backward: the workspace's CPU inner backend.
impl DcnKernel for Flex {}

/// Burn's backward: NdArray.
impl<E: FloatNdArrayElement, I: IntNdArrayElement, Q: QuantElement> DcnKernel for NdArray<E, I, Q>
where
    NdArrayTensor: From<SharedArray<E>>,
    NdArrayTensor: From<SharedArray<I>>,
{
}

/// Custom op id of the backward; inputs `[x, offset, weight, mask?, bias?, grad_out]`, outputs
/// `[x_grad, offset_grad, weight_grad, mask_grad?, bias_grad?]`, each like its input.
const BACKWARD_ID: &str = "burnacc_deform_conv2d_backward";

/// The recorded backward: which optional inputs it has, and the options.
#[derive(Debug)]
struct Backward {
    has_mask: bool,
    has_bias: bool,
    options: DeformConvOptions<2>,
}

impl<B: FusionBackend + DcnKernel> InnerCall<B> for Backward {
    fn run(&self, inputs: &mut RecordedInputs<'_, B>) -> Vec<FloatTensor<B>> {
        let (x, offset, weight) = (inputs.float(), inputs.float(), inputs.float());
        let mask = self.has_mask.then(|| inputs.float());
        let bias = self.has_bias.then(|| inputs.float());
        let grads = B::dcn_backward(
            x,
            offset,
            weight,
            mask,
            bias,
            inputs.float(),
            self.options.clone(),
        );
        [grads.x_grad, grads.offset_grad, grads.weight_grad]
            .into_iter()
            .chain(grads.mask_grad)
            .chain(grads.bias_grad)
            .collect()
    }
}

impl<B: FusionBackend + DcnKernel> DcnKernel for Fusion<B> {
    fn dcn_backward(
        x: FloatTensor<Self>,
        offset: FloatTensor<Self>,
        weight: FloatTensor<Self>,
        mask: Option<FloatTensor<Self>>,
        bias: Option<FloatTensor<Self>>,
        grad_out: FloatTensor<Self>,
        options: DeformConvOptions<2>,
    ) -> DeformConv2dBackward<Self> {
        let (has_mask, has_bias) = (mask.is_some(), bias.is_some());
        let call = Backward {
            has_mask,
            has_bias,
            options,
        };
        let outputs = [
            Some(&x),
            Some(&offset),
            Some(&weight),
            mask.as_ref(),
            bias.as_ref(),
        ]
        .into_iter()
        .flatten()
        .map(like)
        .collect();
        let inputs = [
            Some(x),
            Some(offset),
            Some(weight),
            mask,
            bias,
            Some(grad_out),
        ]
        .into_iter()
        .flatten()
        .collect();
        let mut grads = record::<B, _>(BACKWARD_ID, call, inputs, outputs).into_iter();
        let mut next = || grads.next().expect("declared");
        let (x_grad, offset_grad, weight_grad) = (next(), next(), next());
        let mask_grad = has_mask.then(&mut next);
        let bias_grad = has_bias.then(&mut next);
        DeformConv2dBackward::new(x_grad, offset_grad, weight_grad, mask_grad, bias_grad)
    }
}

/// `Acc<B>` shares `B`'s primitives: the calls go to `B` as they are.
impl<B: DcnKernel> DcnKernel for Acc<B> {
    fn dcn_forward(
        x: FloatTensor<Self>,
        offset: FloatTensor<Self>,
        weight: FloatTensor<Self>,
        mask: Option<FloatTensor<Self>>,
        bias: Option<FloatTensor<Self>>,
        options: DeformConvOptions<2>,
    ) -> FloatTensor<Self> {
        B::dcn_forward(x, offset, weight, mask, bias, options)
    }

    fn dcn_backward(
        x: FloatTensor<Self>,
        offset: FloatTensor<Self>,
        weight: FloatTensor<Self>,
        mask: Option<FloatTensor<Self>>,
        bias: Option<FloatTensor<Self>>,
        grad_out: FloatTensor<Self>,
        options: DeformConvOptions<2>,
    ) -> DeformConv2dBackward<Self> {
        let g = B::dcn_backward(x, offset, weight, mask, bias, grad_out, options);
        DeformConv2dBackward::new(
            g.x_grad,
            g.offset_grad,
            g.weight_grad,
            g.mask_grad,
            g.bias_grad,
        )
    }
}
