//! [`MultiTensorOptim`] for Burn's fusion backend `Fusion<B>` (what `burn::backend::Wgpu` is):
//! each group step is one recorded custom operation ([`crate::custom_op`]), hence a fusion
//! barrier: the element-wise ops recorded before it (the gradient unscaling, the bias
//! corrections) are flushed as their own fused kernels. Each declared output takes the shape
//! and dtype of the tensor it replaces.

use burn::tensor::ops::FloatTensor;
use burn_fusion::{Fusion, FusionBackend};

use super::MultiTensorOptim;
use super::group::{AdamGroup, AdamHyper, AdamUpdate, SgdGroup, SgdHyper, SgdUpdate};
use crate::custom_op::{InnerCall, RecordedInputs, like, record};

/// Custom op id of the Adam step; inputs `[params.., grads.., exp_avg.., exp_avg_sq..,
/// step_size, bc2_sqrt, (found_inf)]`, outputs `[params.., exp_avg.., exp_avg_sq..]`.
const ADAM_ID: &str = "burnacc_multi_tensor_adam";
/// Custom op id of the SGD step; inputs `[params.., grads.., (buffers.., first), (found_inf)]`,
/// outputs `[params.., (buffers..)]`.
const SGD_ID: &str = "burnacc_multi_tensor_sgd";

/// Which step the recorded operation runs, with what it needs to split its input list.
#[derive(Clone, Copy, Debug)]
enum Kind {
    Adam {
        hyper: AdamHyper,
        has_found_inf: bool,
    },
    Sgd {
        hyper: SgdHyper,
        momentum: bool,
        has_found_inf: bool,
    },
}

impl<B: FusionBackend + MultiTensorOptim> InnerCall<B> for Kind {
    fn run(&self, inputs: &mut RecordedInputs<'_, B>) -> Vec<FloatTensor<B>> {
        match *self {
            Kind::Adam {
                hyper,
                has_found_inf,
            } => {
                let n = (inputs.remaining() - 2 - usize::from(has_found_inf)) / 4;
                let group = AdamGroup {
                    params: inputs.floats(n),
                    grads: inputs.floats(n),
                    exp_avg: inputs.floats(n),
                    exp_avg_sq: inputs.floats(n),
                    step_size: inputs.float(),
                    bc2_sqrt: inputs.float(),
                };
                let found_inf = has_found_inf.then(|| inputs.float());
                let update = B::multi_tensor_adam(group, hyper, found_inf);
                [update.params, update.exp_avg, update.exp_avg_sq].concat()
            }
            Kind::Sgd {
                hyper,
                momentum,
                has_found_inf,
            } => {
                let shared = usize::from(momentum) + usize::from(has_found_inf);
                let per_tensor = 2 + usize::from(momentum);
                let n = (inputs.remaining() - shared) / per_tensor;
                let params = inputs.floats(n);
                let grads = inputs.floats(n);
                let (momentum_buffer, first) = if momentum {
                    (inputs.floats(n), Some(inputs.float()))
                } else {
                    (Vec::new(), None)
                };
                let found_inf = has_found_inf.then(|| inputs.float());
                let group = SgdGroup {
                    params,
                    grads,
                    momentum_buffer,
                    first,
                };
                let update = B::multi_tensor_sgd(group, hyper, found_inf);
                [update.params, update.momentum_buffer].concat()
            }
        }
    }
}

/// `n` tensors off the front of `outputs`.
fn split_off_front<T>(outputs: &mut Vec<T>, n: usize) -> Vec<T> {
    let rest = outputs.split_off(n);
    std::mem::replace(outputs, rest)
}

impl<B: FusionBackend + MultiTensorOptim> MultiTensorOptim for Fusion<B> {
    fn multi_tensor_adam(
        group: AdamGroup<Self>,
        hyper: AdamHyper,
        found_inf: Option<FloatTensor<Self>>,
    ) -> AdamUpdate<Self> {
        let n = group.len();
        if n == 0 {
            return AdamUpdate {
                params: Vec::new(),
                exp_avg: Vec::new(),
                exp_avg_sq: Vec::new(),
            };
        }
        let outputs = [&group.params, &group.exp_avg, &group.exp_avg_sq]
            .into_iter()
            .flatten()
            .map(like)
            .collect();
        let kind = Kind::Adam {
            hyper,
            has_found_inf: found_inf.is_some(),
        };
        let mut inputs = [group.params, group.grads, group.exp_avg, group.exp_avg_sq].concat();
        inputs.push(group.step_size);
        inputs.push(group.bc2_sqrt);
        inputs.extend(found_inf);
        let mut outputs = record::<B, _>(ADAM_ID, kind, inputs, outputs);
        let params = split_off_front(&mut outputs, n);
        let exp_avg = split_off_front(&mut outputs, n);
        AdamUpdate {
            params,
            exp_avg,
            exp_avg_sq: outputs,
        }
    }

    fn multi_tensor_sgd(
        group: SgdGroup<Self>,
        hyper: SgdHyper,
        found_inf: Option<FloatTensor<Self>>,
    ) -> SgdUpdate<Self> {
        let n = group.len();
        if n == 0 {
            return SgdUpdate {
                params: Vec::new(),
                momentum_buffer: Vec::new(),
            };
        }
        let momentum = !group.momentum_buffer.is_empty();
        let outputs = [&group.params, &group.momentum_buffer]
            .into_iter()
            .flatten()
            .map(like)
            .collect();
        let kind = Kind::Sgd {
            hyper,
            momentum,
            has_found_inf: found_inf.is_some(),
        };
        let mut inputs = [group.params, group.grads, group.momentum_buffer].concat();
        if momentum {
            inputs.push(
                group
                    .first
                    .expect("multi_tensor_sgd: momentum buffers need the `first` flags"),
            );
        }
        inputs.extend(found_inf);
        let mut outputs = record::<B, _>(SGD_ID, kind, inputs, outputs);
        let params = split_off_front(&mut outputs, n);
        SgdUpdate {
            params,
            momentum_buffer: outputs,
        }
    }
}
