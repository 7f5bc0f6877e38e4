//! [`GeluKernel`] for Burn's fusion backend `Fusion<B>` (what `burn::backend::Wgpu` is): each
//! call is one recorded custom operation ([`crate::custom_op`]).
//!
//! Declared outputs: `y` and `dx` take the shape and dtype of `x`, `dbias` those of `bias`.
//! Whether a bias GELU has a bias is carried by the recorded call, so one id serves both
//! forms.

use burn::tensor::ops::FloatTensor;
use burn_fusion::{Fusion, FusionBackend};

use super::GeluKernel;
use crate::custom_op::{InnerCall, RecordedInputs, exactly, like, record};

/// Custom op id of the QuickGELU forward; inputs `[x]`, outputs `[y]`.
const QUICK_FORWARD_ID: &str = "burnacc_quick_gelu_forward";
/// Custom op id of the QuickGELU backward; inputs `[x, grad_out]`, outputs `[dx]`.
const QUICK_BACKWARD_ID: &str = "burnacc_quick_gelu_backward";
/// Custom op id of the bias + GELU forward; inputs `[x, bias]` or `[x]`, outputs `[y]`.
const BIAS_FORWARD_ID: &str = "burnacc_bias_gelu_forward";
/// Custom op id of the bias + GELU backward; inputs `[x, bias, grad_out]` or `[x, grad_out]`,
/// outputs `[dx, dbias]` or `[dx]`.
const BIAS_BACKWARD_ID: &str = "burnacc_bias_gelu_backward";

/// Which method of the inner backend the recorded operation runs.
#[derive(Clone, Copy, Debug)]
enum Kind {
    QuickForward,
    QuickBackward,
    BiasForward { has_bias: bool },
    BiasBackward { has_bias: bool },
}

impl<B: FusionBackend + GeluKernel> InnerCall<B> for Kind {
    fn run(&self, inputs: &mut RecordedInputs<'_, B>) -> Vec<FloatTensor<B>> {
        match *self {
            Kind::QuickForward => vec![B::fused_quick_gelu(inputs.float())],
            Kind::QuickBackward => {
                let [x, grad_out] = exactly(inputs.floats(2));
                vec![B::fused_quick_gelu_backward(x, grad_out)]
            }
            Kind::BiasForward { has_bias } => {
                let x = inputs.float();
                let bias = has_bias.then(|| inputs.float());
                vec![B::fused_bias_gelu(x, bias)]
            }
            Kind::BiasBackward { has_bias } => {
                let x = inputs.float();
                let bias = has_bias.then(|| inputs.float());
                let (dx, dbias) = B::fused_bias_gelu_backward(x, bias, inputs.float());
                core::iter::once(dx).chain(dbias).collect()
            }
        }
    }
}

impl<B: FusionBackend + GeluKernel> GeluKernel for Fusion<B> {
    fn fused_quick_gelu(x: FloatTensor<Self>) -> FloatTensor<Self> {
        let out = vec![like(&x)];
        let [y] = exactly(record::<B, _>(
            QUICK_FORWARD_ID,
            Kind::QuickForward,
            vec![x],
            out,
        ));
        y
    }

    fn fused_quick_gelu_backward(
        x: FloatTensor<Self>,
        grad_out: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        let out = vec![like(&x)];
        let inputs = vec![x, grad_out];
        let [dx] = exactly(record::<B, _>(
            QUICK_BACKWARD_ID,
            Kind::QuickBackward,
            inputs,
            out,
        ));
        dx
    }

    fn fused_bias_gelu(x: FloatTensor<Self>, bias: Option<FloatTensor<Self>>) -> FloatTensor<Self> {
        let out = vec![like(&x)];
        let kind = Kind::BiasForward {
            has_bias: bias.is_some(),
        };
        let inputs = core::iter::once(x).chain(bias).collect();
        let [y] = exactly(record::<B, _>(BIAS_FORWARD_ID, kind, inputs, out));
        y
    }

    fn fused_bias_gelu_backward(
        x: FloatTensor<Self>,
        bias: Option<FloatTensor<Self>>,
        grad_out: FloatTensor<Self>,
    ) -> (FloatTensor<Self>, Option<FloatTensor<Self>>) {
        let mut outputs = vec![like(&x)];
        outputs.extend(bias.as_ref().map(like));
        let kind = Kind::BiasBackward {
            has_bias: bias.is_some(),
        };
        let inputs = core::iter::once(x)
            .chain(bias)
            .chain(core::iter::once(grad_out))
            .collect();
        let mut outputs = record::<B, _>(BIAS_BACKWARD_ID, kind, inputs, outputs).into_iter();
        let dx = outputs.next().expect("dx was declared");
        (dx, outputs.next())
    }
}
