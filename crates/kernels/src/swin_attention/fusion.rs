//! [`SwinAttentionKernel`] for Burn's fusion backend `Fusion<B>` (what `burn::backend::Wgpu`
//! is): each call is one recorded custom operation ([`crate::custom_op`]); its single output
//! takes the shape and dtype of `scores` (forward) or `probs` (backward).

use burn::tensor::ops::{FloatTensor, IntTensor};
use burn_fusion::{Fusion, FusionBackend};

use super::SwinAttentionKernel;
use crate::custom_op::{InnerCall, RecordedInputs, exactly, like, record};

/// Custom op id of the forward; inputs `[scores, table, index]`, then the mask if any;
/// outputs `[probs]`.
const FORWARD_ID: &str = "burnacc_window_softmax_forward";
/// Custom op id of the backward; inputs `[probs, grad_probs]`, outputs `[dscores]`.
const BACKWARD_ID: &str = "burnacc_window_softmax_backward";

/// Which method of the inner backend the recorded operation runs.
#[derive(Clone, Copy, Debug)]
enum Kind {
    Forward { has_mask: bool },
    Backward,
}

impl<B: FusionBackend + SwinAttentionKernel> InnerCall<B> for Kind {
    fn run(&self, inputs: &mut RecordedInputs<'_, B>) -> Vec<FloatTensor<B>> {
        match *self {
            Kind::Forward { has_mask } => {
                let [scores, table] = exactly(inputs.floats(2));
                let index = inputs.int();
                let mask = has_mask.then(|| inputs.float());
                vec![B::fused_window_softmax(scores, table, index, mask)]
            }
            Kind::Backward => {
                let [probs, grad_probs] = exactly(inputs.floats(2));
                vec![B::fused_window_softmax_backward(probs, grad_probs)]
            }
        }
    }
}

impl<B: FusionBackend + SwinAttentionKernel> SwinAttentionKernel for Fusion<B> {
    fn fused_window_softmax(
        scores: FloatTensor<Self>,
        table: FloatTensor<Self>,
        index: IntTensor<Self>,
        mask: Option<FloatTensor<Self>>,
    ) -> FloatTensor<Self> {
        let out = vec![like(&scores)];
        let kind = Kind::Forward {
            has_mask: mask.is_some(),
        };
        let inputs = [scores, table, index].into_iter().chain(mask).collect();
        let [probs] = exactly(record::<B, _>(FORWARD_ID, kind, inputs, out));
        probs
    }

    fn fused_window_softmax_backward(
        probs: FloatTensor<Self>,
        grad_probs: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        let out = vec![like(&probs)];
        let inputs = vec![probs, grad_probs];
        let [dscores] = exactly(record::<B, _>(BACKWARD_ID, Kind::Backward, inputs, out));
        dscores
    }
}
