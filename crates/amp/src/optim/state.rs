//! An optimizer's per-parameter state as host data, for checkpoints: what PyTorch's
//! `optimizer.state_dict()["state"]` holds (`step`, `exp_avg`, `exp_avg_sq`, or
//! `momentum_buffer`), keyed by parameter.
//!
//! Reading the state back syncs the device once per tensor; it happens only when a checkpoint
//! is written, never during a step.

use super::device::Erased;
use burn::module::ParamId;
use burn::tensor::backend::Backend;
use burn::tensor::{DType, Device, Tensor, TensorData, try_read_sync};
use std::collections::HashMap;
use thiserror::Error;

/// One parameter's state: its step counter and its named buffers (each the parameter's shape
/// and dtype).
#[derive(Clone, Debug, PartialEq)]
pub struct ParamStateData {
    /// Steps taken (skipped steps not counted); an exact small integer.
    pub step: f32,
    /// `(name, data)`: `exp_avg` and `exp_avg_sq` (Adam/AdamW) or `momentum_buffer` (SGD), in
    /// the optimizer's order when exported, in any order when imported.
    pub buffers: Vec<(String, TensorData)>,
}

/// A whole optimizer's state.
#[derive(Clone, Debug, PartialEq)]
pub struct OptimizerStateData {
    /// `"sgd"`, `"adam"` or `"adamw"`: the state of one kind does not load into another.
    pub kind: String,
    /// The state of every parameter that has stepped.
    pub params: HashMap<ParamId, ParamStateData>,
}

/// Why a state does not load into an optimizer.
#[derive(Clone, Debug, Error, PartialEq)]
pub enum StateError {
    /// The state was saved by another kind of optimizer.
    #[error("optimizer state of {found}, but the optimizer is {expected}")]
    Kind {
        /// The optimizer's kind.
        expected: String,
        /// The state's kind.
        found: String,
    },
    /// A parameter's buffers are not the ones this optimizer keeps.
    #[error("parameter {param}: state buffers {found:?}, expected {expected:?}")]
    Buffers {
        /// The parameter.
        param: ParamId,
        /// The buffers this optimizer keeps.
        expected: Vec<&'static str>,
        /// The buffers found.
        found: Vec<String>,
    },
    /// The device could not be read.
    #[error("cannot read the optimizer state back from the device: {0}")]
    Read(String),
}

/// A per-parameter state of named, rank-erased buffers and a step counter.
pub(crate) trait NamedState<B: Backend>: Sized {
    /// The buffers' names, in order.
    const BUFFERS: &'static [&'static str];
    /// The step counter, f32 `[1]`.
    fn step(&self) -> Tensor<B, 1>;
    /// The buffers, in the order of `BUFFERS`.
    fn buffers(&self) -> Vec<&Erased<B>>;
    /// A state from a step counter and buffers in the order of `BUFFERS`.
    fn from_parts(step: Tensor<B, 1>, buffers: Vec<Erased<B>>) -> Self;
}

/// The host copy of `states`.
pub(crate) fn export<B: Backend, S: NamedState<B>>(
    kind: &str,
    states: &HashMap<ParamId, S>,
) -> Result<OptimizerStateData, StateError> {
    let mut params = HashMap::with_capacity(states.len());
    for (id, state) in states {
        let step = read::<B>(state.step().into_primitive().tensor())?;
        let step = step
            .convert::<f32>()
            .to_vec::<f32>()
            .map_err(|e| StateError::Read(format!("{e:?}")))?[0];
        let mut buffers = Vec::with_capacity(S::BUFFERS.len());
        for (name, buffer) in S::BUFFERS.iter().zip(state.buffers()) {
            buffers.push((name.to_string(), read::<B>(buffer.float())?));
        }
        params.insert(*id, ParamStateData { step, buffers });
    }
    Ok(OptimizerStateData {
        kind: kind.to_owned(),
        params,
    })
}

/// `states` from their host copy `data`, on `device`; buffers keep the dtype they were saved
/// in. Nothing changes unless the whole state is valid.
pub(crate) fn import<B: Backend, S: NamedState<B>>(
    kind: &str,
    data: OptimizerStateData,
    device: &Device<B>,
) -> Result<HashMap<ParamId, S>, StateError> {
    if data.kind != kind {
        return Err(StateError::Kind {
            expected: kind.to_owned(),
            found: data.kind,
        });
    }
    let mut states = HashMap::with_capacity(data.params.len());
    for (id, mut param) in data.params {
        let mut names: Vec<&str> = param.buffers.iter().map(|(n, _)| n.as_str()).collect();
        names.sort_unstable();
        let mut expected = S::BUFFERS.to_vec();
        expected.sort_unstable();
        if names != expected {
            return Err(StateError::Buffers {
                param: id,
                expected: S::BUFFERS.to_vec(),
                found: names.into_iter().map(str::to_owned).collect(),
            });
        }
        let step =
            Tensor::<B, 1>::from_data(TensorData::new(vec![param.step], [1]), (device, DType::F32));
        // In the optimizer's order, whatever order they were given in.
        let buffers = S::BUFFERS
            .iter()
            .map(|name| {
                let at = param.buffers.iter().position(|(n, _)| n == name);
                let (_, data) = param.buffers.swap_remove(at.expect("names checked above"));
                Erased::from_float(B::float_from_data(data, device))
            })
            .collect();
        states.insert(id, S::from_parts(step, buffers));
    }
    Ok(states)
}

fn read<B: Backend>(tensor: burn::tensor::ops::FloatTensor<B>) -> Result<TensorData, StateError> {
    try_read_sync(B::float_into_data(tensor))
        .ok_or_else(|| StateError::Read("the backend cannot read synchronously".into()))?
        .map_err(|e| StateError::Read(format!("{e:?}")))
}
