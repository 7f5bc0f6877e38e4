//! [`MultiTensorOptim`] for Burn's fusion backend `Fusion<B>` (what `burn::backend::Wgpu` is):
//! each group step is recorded as one custom operation that, when the fusion stream executes,
//! runs the inner backend's multi-tensor step on the materialized tensors.
//!
//! The operation is a fusion barrier, like every custom operation: the element-wise ops
//! recorded before it (the gradient unscaling, the bias corrections) are flushed as their own
//! fused kernels. Outputs are declared when the operation is recorded: each new tensor takes
//! the shape and dtype of the tensor it replaces, and the inner results are checked against
//! the declarations.

use core::marker::PhantomData;

use burn::backend::ir::{CustomOpIr, HandleContainer, OperationIr, TensorIr};
use burn::tensor::ops::FloatTensor;
use burn_fusion::stream::{Operation, OperationStreams};
use burn_fusion::{Fusion, FusionBackend, FusionRuntime};

use super::MultiTensorOptim;
use super::group::{AdamGroup, AdamHyper, AdamUpdate, SgdGroup, SgdHyper, SgdUpdate};

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

/// One recorded group step on the inner backend `B`.
#[derive(Debug)]
struct MultiTensorOp<B> {
    desc: CustomOpIr,
    kind: Kind,
    _backend: PhantomData<B>,
}

impl<B: FusionBackend + MultiTensorOptim> Operation<B::FusionRuntime> for MultiTensorOp<B> {
    fn execute(
        &self,
        handles: &mut HandleContainer<<B::FusionRuntime as FusionRuntime>::FusionHandle>,
    ) {
        let mut inputs = self
            .desc
            .inputs
            .iter()
            .map(|ir| handles.get_float_tensor::<B>(ir))
            .collect::<Vec<_>>()
            .into_iter();
        let outputs: Vec<FloatTensor<B>> = match self.kind {
            Kind::Adam {
                hyper,
                has_found_inf,
            } => {
                let n = (self.desc.inputs.len() - 2 - usize::from(has_found_inf)) / 4;
                let mut take = |count: usize| inputs.by_ref().take(count).collect::<Vec<_>>();
                let group = AdamGroup {
                    params: take(n),
                    grads: take(n),
                    exp_avg: take(n),
                    exp_avg_sq: take(n),
                    step_size: take(1).remove(0),
                    bc2_sqrt: take(1).remove(0),
                };
                let found_inf = has_found_inf.then(|| take(1).remove(0));
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
                let n = (self.desc.inputs.len() - shared) / per_tensor;
                let mut take = |count: usize| inputs.by_ref().take(count).collect::<Vec<_>>();
                let params = take(n);
                let grads = take(n);
                let (momentum_buffer, first) = if momentum {
                    (take(n), Some(take(1).remove(0)))
                } else {
                    (Vec::new(), None)
                };
                let found_inf = has_found_inf.then(|| take(1).remove(0));
                let group = SgdGroup {
                    params,
                    grads,
                    momentum_buffer,
                    first,
                };
                let update = B::multi_tensor_sgd(group, hyper, found_inf);
                [update.params, update.momentum_buffer].concat()
            }
        };
        assert_eq!(
            outputs.len(),
            self.desc.outputs.len(),
            "{}: output count",
            self.desc.id
        );
        for (ir, tensor) in self.desc.outputs.iter().zip(outputs) {
            use burn::tensor::TensorMetadata;
            assert!(
                tensor.dtype() == ir.dtype && tensor.shape() == ir.shape,
                "{}: the inner backend returned {:?} {:?} where {:?} {:?} was declared",
                self.desc.id,
                tensor.dtype(),
                tensor.shape(),
                ir.dtype,
                ir.shape,
            );
            handles.register_float_tensor::<B>(&ir.id, tensor);
        }
    }
}

/// Records `kind` over `inputs`, with one output shaped and typed like each of `like`, and
/// returns the (lazy) outputs in order.
fn record<B: FusionBackend + MultiTensorOptim>(
    id: &'static str,
    kind: Kind,
    inputs: Vec<FloatTensor<Fusion<B>>>,
    like: &[FloatTensor<Fusion<B>>],
) -> Vec<FloatTensor<Fusion<B>>> {
    let Some(head) = inputs.first() else {
        return Vec::new();
    };
    // All tensors live on one device, hence one fusion client.
    let client = head.client.clone();
    let outputs: Vec<TensorIr> = like
        .iter()
        .map(|t| TensorIr::uninit(client.create_empty_handle(), t.shape.clone(), t.dtype))
        .collect();
    // Registers each input's stream, so that the operation waits for whatever produces them.
    let streams = OperationStreams::with_inputs(&inputs);
    let inputs: Vec<TensorIr> = inputs.into_iter().map(|t| t.into_ir()).collect();
    let desc = CustomOpIr::new(id, &inputs, &outputs);
    let op = MultiTensorOp::<B> {
        desc: desc.clone(),
        kind,
        _backend: PhantomData,
    };
    client.register(streams, OperationIr::Custom(desc), op)
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
        let like = [
            group.params.clone(),
            group.exp_avg.clone(),
            group.exp_avg_sq.clone(),
        ]
        .concat();
        let kind = Kind::Adam {
            hyper,
            has_found_inf: found_inf.is_some(),
        };
        let mut inputs = [group.params, group.grads, group.exp_avg, group.exp_avg_sq].concat();
        inputs.push(group.step_size);
        inputs.push(group.bc2_sqrt);
        inputs.extend(found_inf);
        let mut outputs = record::<B>(ADAM_ID, kind, inputs, &like);
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
        let like = [group.params.clone(), group.momentum_buffer.clone()].concat();
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
        let mut outputs = record::<B>(SGD_ID, kind, inputs, &like);
        let params = split_off_front(&mut outputs, n);
        SgdUpdate {
            params,
            momentum_buffer: outputs,
        }
    }
}
