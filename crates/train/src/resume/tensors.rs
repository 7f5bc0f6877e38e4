//! A checkpoint's tensors as safetensors files, readable by PyTorch
//! (`safetensors.torch.load_file`):
//! - `model.safetensors`: every tensor of the model (parameters and buffers such as batch
//!   norm's running statistics) under Burn's module paths (`layer1.0.conv1.weight`), in the
//!   dtype it has (f32 master weights), through Burn's own store (`burn-store`);
//! - `optimizer.safetensors`: each parameter's optimizer state under `<path>.<buffer>`
//!   (`<path>.step`, f32 `[1]`; `<path>.exp_avg`, `<path>.exp_avg_sq`, or
//!   `<path>.momentum_buffer`), the optimizer's kind in the header's metadata.
//!
//! The optimizer keys its state by `ParamId`, which a fresh model does not share with the
//! saved one; module paths are what both have in common.

use anyhow::{Context, Result, anyhow, bail};
use burn::module::{Module, ParamId};
use burn::tensor::backend::Backend;
use burn::tensor::{DType, TensorData};
use burn_store::{ModuleSnapshot, SafetensorsStore};
use burnacc_amp::optim::{OptimizerStateData, ParamStateData};
use safetensors::{Dtype, SafeTensors, tensor::TensorView};
use std::collections::HashMap;
use std::path::Path;

/// The header metadata key naming the optimizer's kind.
const OPTIMIZER_KEY: &str = "optimizer";

/// The model's tensors as safetensors bytes.
pub fn model_bytes<B: Backend, M: Module<B>>(model: &M) -> Result<Vec<u8>> {
    let mut store = SafetensorsStore::from_bytes(None);
    model
        .save_into(&mut store)
        .map_err(|e| anyhow!("cannot serialise the model: {e}"))?;
    store
        .get_bytes()
        .map_err(|e| anyhow!("cannot serialise the model: {e}"))
}

/// The tensors of safetensors `bytes` holding a NaN or an infinity (f32 and f64 tensors; the
/// model's master weights are f32).
pub fn non_finite_tensors(bytes: &[u8]) -> Result<Vec<String>> {
    let tensors = SafeTensors::deserialize(bytes)?;
    let mut found: Vec<String> = tensors
        .tensors()
        .into_iter()
        .filter(|(_, view)| match view.dtype() {
            Dtype::F32 => view
                .data()
                .chunks_exact(4)
                .any(|b| !f32::from_le_bytes(b.try_into().expect("4 bytes")).is_finite()),
            Dtype::F64 => view
                .data()
                .chunks_exact(8)
                .any(|b| !f64::from_le_bytes(b.try_into().expect("8 bytes")).is_finite()),
            _ => false,
        })
        .map(|(name, _)| name)
        .collect();
    found.sort();
    Ok(found)
}

/// `model` with the tensors of `bytes` (read from `file`). Refused, naming `file` and the
/// tensors, unless `bytes` holds exactly the model's tensors with their shapes and dtypes.
pub fn load_model<B: Backend, M: Module<B>>(
    mut model: M,
    bytes: Vec<u8>,
    file: &Path,
) -> Result<M> {
    // Burn's store loads a tensor in the dtype of the file: a checkpoint in another dtype
    // would change the model's silently.
    let (_, header) = SafeTensors::read_metadata(&bytes)
        .map_err(|e| anyhow!("{}: not a safetensors file ({e})", file.display()))?;
    let dtypes: HashMap<String, DType> = model
        .collect(None, None, false)
        .into_iter()
        .map(|s| (s.full_path(), s.dtype))
        .collect();
    let mut infos: Vec<_> = header.tensors().into_iter().collect();
    infos.sort_by(|a, b| a.0.cmp(&b.0));
    for (name, info) in infos {
        if let Some(expected) = dtypes.get(&name)
            && dtype_from_file(info.dtype).ok() != Some(*expected)
        {
            bail!(
                "{}: `{name}` is {:?} in the file, {expected:?} in the model",
                file.display(),
                info.dtype
            );
        }
    }
    let mut store = SafetensorsStore::from_bytes(Some(bytes)).allow_partial(true);
    let result = model
        .load_from(&mut store)
        .map_err(|e| anyhow!("{}: does not fit the model: {e}", file.display()))?;
    if !result.errors.is_empty() {
        let errors: Vec<String> = result.errors.iter().map(|e| e.to_string()).collect();
        bail!(
            "{}: does not fit the model: {}",
            file.display(),
            errors.join("; ")
        );
    }
    if !result.missing.is_empty() {
        let missing: Vec<&str> = result.missing.iter().map(|(p, _)| p.as_str()).collect();
        bail!(
            "{}: lacks tensors of the model (a checkpoint of another model?): {}",
            file.display(),
            list(&missing)
        );
    }
    if !result.unused.is_empty() {
        let unused: Vec<&str> = result.unused.iter().map(String::as_str).collect();
        bail!(
            "{}: holds tensors the model does not have (a checkpoint of another model?): {}",
            file.display(),
            list(&unused)
        );
    }
    Ok(model)
}

/// `state` as safetensors bytes, each parameter named by its path in `model`.
pub fn optimizer_bytes<B: Backend, M: Module<B>>(
    state: &OptimizerStateData,
    model: &M,
) -> Result<Vec<u8>> {
    let paths: HashMap<ParamId, String> = model
        .collect(None, None, false)
        .into_iter()
        .filter_map(|s| Some((s.tensor_id?, s.full_path())))
        .collect();
    let steps: Vec<(String, [u8; 4])> = state
        .params
        .iter()
        .map(|(id, p)| Ok((path_of(&paths, id)?, p.step.to_le_bytes())))
        .collect::<Result<_>>()?;
    let mut views: Vec<(String, TensorView<'_>)> = Vec::new();
    for (name, bytes) in &steps {
        views.push((
            format!("{name}.step"),
            TensorView::new(Dtype::F32, vec![1], bytes)?,
        ));
    }
    for (id, param) in &state.params {
        let path = path_of(&paths, id)?;
        for (buffer, data) in &param.buffers {
            let view = TensorView::new(
                dtype_to_file(data.dtype)?,
                data.shape.to_vec(),
                data.as_bytes(),
            )?;
            views.push((format!("{path}.{buffer}"), view));
        }
    }
    let metadata = HashMap::from([(OPTIMIZER_KEY.to_owned(), state.kind.clone())]);
    Ok(safetensors::serialize(views, Some(metadata))?)
}

/// The optimizer state of `bytes` (read from `file`), keyed by the parameters of `model`.
/// Refused, naming `file`, for a tensor of a parameter `model` does not have, or of another
/// shape than its parameter.
pub fn load_optimizer<B: Backend, M: Module<B>>(
    bytes: &[u8],
    file: &Path,
    model: &M,
) -> Result<OptimizerStateData> {
    let bad = |what: String| anyhow!("{}: {what}", file.display());
    let tensors = SafeTensors::deserialize(bytes)
        .map_err(|e| bad(format!("not a safetensors file ({e})")))?;
    let (_, metadata) = SafeTensors::read_metadata(bytes)
        .map_err(|e| bad(format!("not a safetensors file ({e})")))?;
    let kind = metadata
        .metadata()
        .as_ref()
        .and_then(|m| m.get(OPTIMIZER_KEY))
        .ok_or_else(|| bad(format!("no `{OPTIMIZER_KEY}` in its metadata")))?
        .clone();
    let params: HashMap<String, (ParamId, Vec<usize>, DType)> = model
        .collect(None, None, false)
        .into_iter()
        .filter_map(|s| Some((s.full_path(), (s.tensor_id?, s.shape.to_vec(), s.dtype))))
        .collect();
    let mut state: HashMap<ParamId, ParamStateData> = HashMap::new();
    for (name, view) in tensors.tensors() {
        let (path, buffer) = name
            .rsplit_once('.')
            .ok_or_else(|| bad(format!("tensor `{name}` is not `<parameter>.<buffer>`")))?;
        let (id, shape, param_dtype) = params
            .get(path)
            .ok_or_else(|| bad(format!("state of `{path}`, which the model does not have")))?;
        let entry = state.entry(*id).or_insert_with(|| ParamStateData {
            step: 0.0,
            buffers: Vec::new(),
        });
        if buffer == "step" {
            let step: [u8; 4] = (view.dtype() == Dtype::F32 && view.shape() == [1])
                .then(|| view.data().try_into().ok())
                .flatten()
                .ok_or_else(|| bad(format!("`{name}` is not f32 [1]")))?;
            entry.step = f32::from_le_bytes(step);
        } else {
            if view.shape() != shape.as_slice() {
                bail!(
                    "{}: `{name}` has shape {:?}, but the parameter `{path}` has shape {shape:?}",
                    file.display(),
                    view.shape()
                );
            }
            let dtype = dtype_from_file(view.dtype())
                .with_context(|| format!("{}: `{name}`", file.display()))?;
            // The optimizers keep state in the parameter's dtype.
            if dtype != *param_dtype {
                bail!(
                    "{}: `{name}` is {dtype:?} in the file, but the parameter `{path}` is \
                     {param_dtype:?}",
                    file.display()
                );
            }
            let data =
                TensorData::from_bytes_vec(view.data().to_vec(), view.shape().to_vec(), dtype);
            entry.buffers.push((buffer.to_owned(), data));
        }
    }
    Ok(OptimizerStateData {
        kind,
        params: state,
    })
}

fn path_of(paths: &HashMap<ParamId, String>, id: &ParamId) -> Result<String> {
    paths.get(id).cloned().ok_or_else(|| {
        anyhow!("the optimizer holds state of parameter {id}, which the model does not have")
    })
}

fn dtype_to_file(dtype: DType) -> Result<Dtype> {
    Ok(match dtype {
        DType::F64 => Dtype::F64,
        DType::F32 => Dtype::F32,
        DType::F16 => Dtype::F16,
        DType::BF16 => Dtype::BF16,
        other => bail!("optimizer state in {other:?} cannot be checkpointed"),
    })
}

fn dtype_from_file(dtype: Dtype) -> Result<DType> {
    Ok(match dtype {
        Dtype::F64 => DType::F64,
        Dtype::F32 => DType::F32,
        Dtype::F16 => DType::F16,
        Dtype::BF16 => DType::BF16,
        other => bail!("{other:?} is not a float dtype of optimizer state"),
    })
}

/// At most 8 names, then how many more.
fn list(names: &[&str]) -> String {
    let shown = names.iter().take(8).copied().collect::<Vec<_>>().join(", ");
    match names.len() {
        n if n > 8 => format!("{shown} and {} more", n - 8),
        _ => shown,
    }
}
