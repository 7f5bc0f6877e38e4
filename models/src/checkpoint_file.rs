//! Reading a PyTorch checkpoint in either of its formats: safetensors, or `torch.save`'s
//! pickle (`.pth`, `.pt`, `.bin`; the zip archive of PyTorch ≥ 1.6 or the legacy pickle).
//!
//! The format is told by the file's first bytes, not its name: a zip archive starts with `PK`,
//! a legacy pickle with the protocol opcode `0x80`; anything else is read as safetensors.
//! Pickles go through burn-store's PyTorch reader, which reads tensors lazily and runs no
//! Python code. A `torch.save({"state_dict": …})` or `{"model": …}` training checkpoint has its
//! state dict one level down ([`NESTED_STATE_DICT_KEYS`]); its keys are lifted to the top.

use burn::tensor::backend::Backend;
use burn_store::pytorch::PytorchReader;
use burn_store::{
    ApplyResult, ModuleSnapshot, PyTorchToBurnAdapter, PytorchStore, PytorchStoreError,
    SafetensorsStore, SafetensorsStoreError,
};
use std::io::Read;
use std::path::Path;

/// The keys under which training scripts nest a state dict (timm's and PyTorch examples'
/// `state_dict`, torchvision references' `model`, Lightning-style `model_state_dict`).
pub const NESTED_STATE_DICT_KEYS: [&str; 3] = ["state_dict", "model_state_dict", "model"];

/// [`NESTED_STATE_DICT_KEYS`] as a key remapping: the prefix removed.
const NESTED_STATE_DICT: (&str, &str) = (r"^(?:state_dict|model_state_dict|model)\.", "");

/// The two formats of a PyTorch checkpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CheckpointFormat {
    /// safetensors (Hugging Face, timm, `safetensors.torch.save_file`).
    Safetensors,
    /// `torch.save`'s pickle (zip or legacy).
    Pickle,
}

impl CheckpointFormat {
    /// The format of `path`, from its first bytes.
    pub fn of(path: &Path) -> std::io::Result<Self> {
        let mut magic = [0u8; 2];
        let read = std::fs::File::open(path)?.read(&mut magic)?;
        Ok(match &magic[..read] {
            [b'P', b'K'] | [0x80, _] => Self::Pickle,
            _ => Self::Safetensors,
        })
    }
}

/// Why a load failed: the file could not be read, or its tensors do not fit the model.
#[derive(Debug)]
pub(crate) enum LoadFailure {
    /// Unreadable, or not a checkpoint.
    Read(String),
    /// Shapes or dtypes that do not fit, one per line.
    Mismatch(String),
}

/// How to read a checkpoint into a model.
pub(crate) struct LoadOptions<'a> {
    /// `(regex over the file's keys, replacement)`, applied in order.
    pub remaps: &'a [(&'a str, &'a str)],
    /// Only the Burn paths it accepts are loaded (`(path, container type)`).
    pub predicate: Option<fn(&str, &str) -> bool>,
}

/// Applies the checkpoint `path` to `model` through burn-store, with the PyTorch adapter
/// (`Linear` weights transposed, norm `weight`/`bias` as γ/β), missing tensors allowed (the
/// caller decides which may be missing). A mismatch of any tensor fails the whole load.
pub(crate) fn apply_checkpoint<B: Backend, M: ModuleSnapshot<B>>(
    model: &mut M,
    path: &Path,
    options: &LoadOptions<'_>,
) -> Result<ApplyResult, LoadFailure> {
    if !path.is_file() {
        return Err(LoadFailure::Read("no such file".into()));
    }
    let format = CheckpointFormat::of(path).map_err(|e| LoadFailure::Read(e.to_string()))?;
    let result = match format {
        CheckpointFormat::Safetensors => {
            let mut store = SafetensorsStore::from_file(path)
                .with_from_adapter(PyTorchToBurnAdapter)
                .allow_partial(true);
            for &(from, to) in options.remaps {
                store = store.with_key_remapping(from, to);
            }
            if let Some(predicate) = options.predicate {
                store = store.with_predicate(predicate);
            }
            model.load_from(&mut store).map_err(|e| match e {
                SafetensorsStoreError::ValidationFailed(errors) => LoadFailure::Mismatch(errors),
                other => LoadFailure::Read(other.to_string()),
            })?
        }
        CheckpointFormat::Pickle => {
            // The store's own adapter is the PyTorch one; keys are kept as the file has them
            // (no renumbering of `Sequential` indices).
            let mut store = PytorchStore::from_file(path)
                .allow_partial(true)
                .map_indices_contiguous(false)
                .with_key_remapping(NESTED_STATE_DICT.0, NESTED_STATE_DICT.1);
            for &(from, to) in options.remaps {
                store = store.with_key_remapping(from, to);
            }
            if let Some(predicate) = options.predicate {
                store = store.with_predicate(predicate);
            }
            model.load_from(&mut store).map_err(|e| match e {
                PytorchStoreError::ValidationFailed(errors) => LoadFailure::Mismatch(errors),
                other => LoadFailure::Read(other.to_string()),
            })?
        }
    };
    if !result.errors.is_empty() {
        let errors: Vec<String> = result.errors.iter().map(|e| e.to_string()).collect();
        return Err(LoadFailure::Mismatch(errors.join("\n")));
    }
    Ok(result)
}

/// The shape of tensor `key` (as the file names it, nested state dicts lifted) in the
/// checkpoint `path`; `None` when it has no such tensor. Only the header (safetensors) or the
/// pickle's index (PyTorch) is read, not the tensors.
pub fn checkpoint_tensor_shape(path: &Path, key: &str) -> Result<Option<Vec<usize>>, String> {
    match CheckpointFormat::of(path).map_err(|e| e.to_string())? {
        CheckpointFormat::Safetensors => safetensors_shape(path, key),
        CheckpointFormat::Pickle => {
            let reader = PytorchReader::new(path).map_err(|e| e.to_string())?;
            let nested = NESTED_STATE_DICT_KEYS.map(|outer| format!("{outer}.{key}"));
            Ok(std::iter::once(key)
                .chain(nested.iter().map(String::as_str))
                .find_map(|name| reader.get(name))
                .map(|snapshot| snapshot.shape.to_vec()))
        }
    }
}

/// safetensors' header alone: `safetensors::SafeTensors::read_metadata` wants the whole file in
/// memory (or mapped, which needs `unsafe`), and a checkpoint can be hundreds of MB.
fn safetensors_shape(path: &Path, key: &str) -> Result<Option<Vec<usize>>, String> {
    /// safetensors' own bound on a header.
    const MAX_HEADER: u64 = 100_000_000;
    let not_safetensors = |why: &str| format!("not a safetensors or PyTorch file ({why})");
    let mut reader = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let mut length = [0u8; 8];
    reader
        .read_exact(&mut length)
        .map_err(|_| not_safetensors("shorter than its header"))?;
    let length = u64::from_le_bytes(length);
    if length > MAX_HEADER {
        return Err(not_safetensors("header too large"));
    }
    let mut header = vec![0u8; length as usize];
    reader
        .read_exact(&mut header)
        .map_err(|_| not_safetensors("shorter than its header"))?;
    let header: serde_json::Value =
        serde_json::from_slice(&header).map_err(|_| not_safetensors("header is not JSON"))?;
    Ok(header[key]["shape"].as_array().map(|dims| {
        dims.iter()
            .filter_map(|d| d.as_u64().map(|d| d as usize))
            .collect()
    }))
}
