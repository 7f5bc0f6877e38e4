//! [`LayerNormKernel`] for Burn's fusion backend `Fusion<B>` (what `burn::backend::Wgpu` is):
//! each call is one recorded custom operation ([`crate::custom_op`]).
//!
//! Declared outputs: `y` and `dx` take the shape and dtype of `x`; `dgamma`, `dbeta` those of
//! `gamma`; the statistics `mean`, `rstd` are `[rows]` in f32, which is what the CubeCL
//! kernels produce for every input dtype.

use burn::tensor::ops::FloatTensor;
use burn::tensor::{DType, Shape};
use burn_fusion::{Fusion, FusionBackend};

use super::LayerNormKernel;
use crate::custom_op::{InnerCall, RecordedInputs, exactly, like, record};

/// Custom op id of the forward; inputs `[x, gamma, beta]`, outputs `[y, mean, rstd]`.
const FORWARD_ID: &str = "burnacc_layer_norm_forward";
/// Custom op id of the backward; inputs `[x, gamma, grad_out, mean, rstd]`, outputs
/// `[dx, dgamma, dbeta]`.
const BACKWARD_ID: &str = "burnacc_layer_norm_backward";

/// Which method of the inner backend the recorded operation runs.
#[derive(Clone, Copy, Debug)]
enum Kind {
    Forward { eps: f64 },
    Backward,
}

impl<B: FusionBackend + LayerNormKernel> InnerCall<B> for Kind {
    fn run(&self, inputs: &mut RecordedInputs<'_, B>) -> Vec<FloatTensor<B>> {
        match *self {
            Kind::Forward { eps } => {
                let [x, gamma, beta] = exactly(inputs.floats(3));
                let (y, mean, rstd) = B::fused_layer_norm_with_stats(x, gamma, beta, eps);
                vec![y, mean, rstd]
            }
            Kind::Backward => {
                let [x, gamma, grad_out, mean, rstd] = exactly(inputs.floats(5));
                let (dx, dgamma, dbeta) =
                    B::fused_layer_norm_backward(x, gamma, grad_out, mean, rstd);
                vec![dx, dgamma, dbeta]
            }
        }
    }
}

/// `[..., width]` → `rows`, the product of the leading dimensions (the statistics' length).
fn rows(shape: &Shape) -> usize {
    let (_, leading) = shape
        .as_slice()
        .split_last()
        .expect("layer_norm: the input must have at least one dimension");
    leading.iter().product()
}

impl<B: FusionBackend + LayerNormKernel> LayerNormKernel for Fusion<B> {
    /// `(y, mean, rstd)`: `y` like `x`, `mean` and `rstd` `[rows]` in f32.
    fn fused_layer_norm_with_stats(
        x: FloatTensor<Self>,
        gamma: FloatTensor<Self>,
        beta: FloatTensor<Self>,
        eps: f64,
    ) -> (FloatTensor<Self>, FloatTensor<Self>, FloatTensor<Self>) {
        let stats = Shape::new([rows(&x.shape)]);
        let outputs = vec![like(&x), (stats.clone(), DType::F32), (stats, DType::F32)];
        let [y, mean, rstd] = exactly(record::<B, _>(
            FORWARD_ID,
            Kind::Forward { eps },
            vec![x, gamma, beta],
            outputs,
        ));
        (y, mean, rstd)
    }

    /// `(dx, dgamma, dbeta)`: `dx` like `x`, `dgamma` and `dbeta` like `gamma`.
    fn fused_layer_norm_backward(
        x: FloatTensor<Self>,
        gamma: FloatTensor<Self>,
        grad_out: FloatTensor<Self>,
        mean: FloatTensor<Self>,
        rstd: FloatTensor<Self>,
    ) -> (FloatTensor<Self>, FloatTensor<Self>, FloatTensor<Self>) {
        let outputs = vec![like(&x), like(&gamma), like(&gamma)];
        let [dx, dgamma, dbeta] = exactly(record::<B, _>(
            BACKWARD_ID,
            Kind::Backward,
            vec![x, gamma, grad_out, mean, rstd],
            outputs,
        ));
        (dx, dgamma, dbeta)
    }
}
