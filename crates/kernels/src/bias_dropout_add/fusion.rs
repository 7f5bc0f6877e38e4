//! [`BiasDropoutAddKernel`] for Burn's fusion backend `Fusion<B>` (what `burn::backend::Wgpu`
//! is): each call is one recorded custom operation ([`crate::custom_op`]).
//!
//! The seed tensor is one of the operation's inputs, so fusion orders the operation after
//! whatever produces it (e.g. the device draw of [`super::dropout_seed`]) and nothing is read
//! back. Declared outputs: `y` and `dx` take the shape and dtype of their input, `dbias` is
//! `[width]` in that dtype.

use burn::tensor::Shape;
use burn::tensor::ops::{FloatTensor, IntTensor};
use burn_fusion::{Fusion, FusionBackend};

use super::BiasDropoutAddKernel;
use crate::custom_op::{InnerCall, RecordedInputs, exactly, like, record};

/// Custom op id of the forward; inputs `[x, residual]`, then `bias` if any, then the seed if
/// any; output `[y]`.
const FORWARD_ID: &str = "burnacc_bias_dropout_add_forward";
/// Custom op id of the backward; inputs `[grad_out]`, then the seed if any; outputs `[dx]` or
/// `[dx, dbias]`.
const BACKWARD_ID: &str = "burnacc_bias_dropout_add_backward";

/// Which method of the inner backend the recorded operation runs, with its parameters and
/// which optional inputs were recorded.
#[derive(Clone, Copy, Debug)]
enum Kind {
    Forward {
        p: f64,
        has_bias: bool,
        has_seed: bool,
    },
    Backward {
        p: f64,
        has_seed: bool,
        with_bias: bool,
    },
}

impl<B: FusionBackend + BiasDropoutAddKernel> InnerCall<B> for Kind {
    fn run(&self, inputs: &mut RecordedInputs<'_, B>) -> Vec<FloatTensor<B>> {
        match *self {
            Kind::Forward {
                p,
                has_bias,
                has_seed,
            } => {
                let [x, residual] = exactly(inputs.floats(2));
                let bias = has_bias.then(|| inputs.float());
                let seed = has_seed.then(|| inputs.int());
                vec![B::fused_bias_dropout_add(x, bias, residual, p, seed)]
            }
            Kind::Backward {
                p,
                has_seed,
                with_bias,
            } => {
                let grad_out = inputs.float();
                let seed = has_seed.then(|| inputs.int());
                let (dx, dbias) = B::fused_bias_dropout_add_backward(grad_out, p, seed, with_bias);
                core::iter::once(dx).chain(dbias).collect()
            }
        }
    }
}

impl<B: FusionBackend + BiasDropoutAddKernel> BiasDropoutAddKernel for Fusion<B> {
    /// `y` like `x`.
    fn fused_bias_dropout_add(
        x: FloatTensor<Self>,
        bias: Option<FloatTensor<Self>>,
        residual: FloatTensor<Self>,
        p: f64,
        seed: Option<IntTensor<Self>>,
    ) -> FloatTensor<Self> {
        let kind = Kind::Forward {
            p,
            has_bias: bias.is_some(),
            has_seed: seed.is_some(),
        };
        let outputs = vec![like(&x)];
        let inputs = [x, residual].into_iter().chain(bias).chain(seed).collect();
        let [y] = exactly(record::<B, _>(FORWARD_ID, kind, inputs, outputs));
        y
    }

    /// `(dx, dbias)`: `dx` like `grad_out`, `dbias` `[width]` in its dtype.
    fn fused_bias_dropout_add_backward(
        grad_out: FloatTensor<Self>,
        p: f64,
        seed: Option<IntTensor<Self>>,
        with_bias: bool,
    ) -> (FloatTensor<Self>, Option<FloatTensor<Self>>) {
        let kind = Kind::Backward {
            p,
            has_seed: seed.is_some(),
            with_bias,
        };
        let (shape, dtype) = like(&grad_out);
        let width = shape[shape.num_dims() - 1];
        let mut outputs = vec![(shape, dtype)];
        if with_bias {
            outputs.push((Shape::new([width]), dtype));
        }
        let inputs = core::iter::once(grad_out).chain(seed).collect();
        let mut outputs = record::<B, _>(BACKWARD_ID, kind, inputs, outputs).into_iter();
        let dx = outputs.next().expect("dx is declared");
        (dx, outputs.next())
    }
}
