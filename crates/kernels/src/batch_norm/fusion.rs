//! [`BatchNormKernel`] for Burn's fusion backend `Fusion<B>` (what `burn::backend::Wgpu` is):
//! each call is one recorded custom operation ([`crate::custom_op`]).
//!
//! Declared outputs: `y` and `dx` take the shape and dtype of `x`; `dgamma`, `dbeta` those of
//! `gamma`; the statistics `mean`, `rstd` are `[C]` in f32, which is what the CubeCL kernels
//! produce for every input dtype.

use burn::tensor::ops::FloatTensor;
use burn::tensor::{DType, Shape};
use burn_fusion::{Fusion, FusionBackend};

use super::BatchNormKernel;
use crate::custom_op::{InnerCall, RecordedInputs, exactly, like, record};

/// Custom op id of the forward; inputs `[x, gamma, beta]`, outputs `[y, mean, rstd]`.
const FORWARD_ID: &str = "burnacc_batch_norm_forward";
/// Custom op id of the backward; inputs `[x, gamma, grad_out, mean, rstd]` and, with a fused
/// ReLU, the forward's output; outputs `[dx, dgamma, dbeta]`.
const BACKWARD_ID: &str = "burnacc_batch_norm_backward";

/// Which method of the inner backend the recorded operation runs.
#[derive(Clone, Copy, Debug)]
enum Kind {
    Forward { eps: f64, relu: bool },
    Backward { relu: bool },
}

impl<B: FusionBackend + BatchNormKernel> InnerCall<B> for Kind {
    fn run(&self, inputs: &mut RecordedInputs<'_, B>) -> Vec<FloatTensor<B>> {
        match *self {
            Kind::Forward { eps, relu } => {
                let [x, gamma, beta] = exactly(inputs.floats(3));
                let (y, mean, rstd) = B::fused_batch_norm_with_stats(x, gamma, beta, eps, relu);
                vec![y, mean, rstd]
            }
            Kind::Backward { relu } => {
                let [x, gamma, grad_out, mean, rstd] = exactly(inputs.floats(5));
                let relu_output = relu.then(|| inputs.float());
                let (dx, dgamma, dbeta) =
                    B::fused_batch_norm_backward(x, gamma, grad_out, mean, rstd, relu_output);
                vec![dx, dgamma, dbeta]
            }
        }
    }
}

impl<B: FusionBackend + BatchNormKernel> BatchNormKernel for Fusion<B> {
    /// `(y, mean, rstd)`: `y` like `x`, `mean` and `rstd` `[C]` in f32.
    fn fused_batch_norm_with_stats(
        x: FloatTensor<Self>,
        gamma: FloatTensor<Self>,
        beta: FloatTensor<Self>,
        eps: f64,
        relu: bool,
    ) -> (FloatTensor<Self>, FloatTensor<Self>, FloatTensor<Self>) {
        let channels = Shape::new([gamma.shape[0]]);
        let outputs = vec![
            like(&x),
            (channels.clone(), DType::F32),
            (channels, DType::F32),
        ];
        let [y, mean, rstd] = exactly(record::<B, _>(
            FORWARD_ID,
            Kind::Forward { eps, relu },
            vec![x, gamma, beta],
            outputs,
        ));
        (y, mean, rstd)
    }

    /// `(dx, dgamma, dbeta)`: `dx` like `x`, `dgamma` and `dbeta` like `gamma`.
    fn fused_batch_norm_backward(
        x: FloatTensor<Self>,
        gamma: FloatTensor<Self>,
        grad_out: FloatTensor<Self>,
        mean: FloatTensor<Self>,
        rstd: FloatTensor<Self>,
        relu_output: Option<FloatTensor<Self>>,
    ) -> (FloatTensor<Self>, FloatTensor<Self>, FloatTensor<Self>) {
        let outputs = vec![like(&x), like(&gamma), like(&gamma)];
        let relu = relu_output.is_some();
        let mut inputs = vec![x, gamma, grad_out, mean, rstd];
        inputs.extend(relu_output);
        let [dx, dgamma, dbeta] = exactly(record::<B, _>(
            BACKWARD_ID,
            Kind::Backward { relu },
            inputs,
            outputs,
        ));
        (dx, dgamma, dbeta)
    }
}
