//! Writing a model under its reference implementation's `state_dict` keys and layouts
//! (torchvision, timm, transformers), so that a model trained here loads there with
//! `model.load_state_dict(safetensors.torch.load_file(path))` and gives the same outputs.
//!
//! The inverse of the imports (`pytorch_import`, `bert::import`): burn-store's
//! `BurnToPyTorchAdapter` transposes `Linear` weights back to PyTorch's `[out, in]` and names
//! the normalisation layers' γ/β `weight`/`bias`; a family's [`ReferenceExport::RENAMES`] undo
//! its other renames (BERT's `self_attn` and `layer_norm`). Parameters and running statistics
//! are written in f32 whatever the dtype they were trained in; torchvision's batch norms also
//! get their `num_batches_tracked` counter (int64).

use burn::module::Module;
use burn::tensor::TensorData;
use burn::tensor::backend::Backend;
use burn_store::{BurnToPyTorchAdapter, KeyRemapper, ModuleSnapshot};
use safetensors::tensor::{Dtype, TensorView};
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

/// A model family that can be written under a reference implementation's keys.
pub trait ReferenceExport {
    /// The library whose `state_dict` the file matches (`torchvision`, `timm`, `transformers`).
    const LIBRARY: &'static str;
    /// `(regex, replacement)` over the names burn-store's PyTorch adapter gives, in order.
    const RENAMES: &'static [(&'static str, &'static str)] = &[];
    /// Whether the library's batch norms hold `num_batches_tracked` (torchvision's do).
    const COUNTS_BATCHES: bool = false;
}

/// Errors of [`save_reference`]; each names the file.
#[derive(Debug, thiserror::Error)]
#[error("cannot export the model to {}: {reason}", .path.display())]
pub struct ExportError {
    /// The file being written.
    pub path: PathBuf,
    /// What went wrong.
    pub reason: String,
}

/// One tensor of a reference `state_dict`: f32 for parameters and statistics, i64 for
/// `num_batches_tracked`.
#[derive(Clone, Debug)]
pub struct ReferenceTensor {
    /// The reference's key, e.g. `layer1.0.bn1.weight`.
    pub key: String,
    /// The reference's shape (`Linear` weights `[out, in]`).
    pub shape: Vec<usize>,
    /// Little-endian values.
    pub data: ReferenceData,
}

/// The values of a [`ReferenceTensor`].
#[derive(Clone, Debug)]
pub enum ReferenceData {
    /// Parameters and running statistics.
    F32(Vec<f32>),
    /// Batch counters.
    I64(Vec<i64>),
}

/// Every tensor of `model` under its reference key and layout, sorted by key. `batches` is
/// written as `num_batches_tracked` when the family counts batches (the number of train-mode
/// forward passes the model has seen).
pub fn reference_state_dict<B: Backend, M: Module<B> + ReferenceExport>(
    model: &M,
    batches: i64,
) -> Result<Vec<ReferenceTensor>, String> {
    let snapshots = model.collect(None, Some(Box::new(BurnToPyTorchAdapter)), true);
    let remapper = KeyRemapper::from_patterns(M::RENAMES.to_vec()).map_err(|e| e.to_string())?;
    let (snapshots, _) = remapper.remap(snapshots);
    let mut tensors = Vec::with_capacity(snapshots.len());
    for snapshot in snapshots {
        let key = snapshot.full_path();
        let data: TensorData = snapshot.to_data().map_err(|e| format!("{key}: {e:?}"))?;
        let shape = data.shape.to_vec();
        let values = data
            .convert::<f32>()
            .to_vec::<f32>()
            .map_err(|e| format!("{key}: {e:?}"))?;
        if let Some(norm) = key
            .strip_suffix(".running_var")
            .filter(|_| M::COUNTS_BATCHES)
        {
            tensors.push(ReferenceTensor {
                key: format!("{norm}.num_batches_tracked"),
                shape: Vec::new(),
                data: ReferenceData::I64(vec![batches]),
            });
        }
        tensors.push(ReferenceTensor {
            key,
            shape,
            data: ReferenceData::F32(values),
        });
    }
    tensors.sort_by(|a, b| a.key.cmp(&b.key));
    Ok(tensors)
}

/// Writes [`reference_state_dict`] to `path` as safetensors, atomically: a partial file beside
/// it, flushed, then renamed. The metadata says `format = pt`, the `library`, and
/// `reference_config`: the JSON arguments that build the reference model
/// (`ResNetConfig::reference_config`, …), which `scripts/check_export.py` reads. Returns the
/// number of tensors written.
pub fn save_reference<B: Backend, M: Module<B> + ReferenceExport>(
    model: &M,
    path: &Path,
    batches: i64,
    reference_config: &str,
) -> Result<usize, ExportError> {
    let error = |reason: String| ExportError {
        path: path.to_owned(),
        reason,
    };
    let tensors = reference_state_dict(model, batches).map_err(error)?;
    let bytes: Vec<(Dtype, Vec<u8>)> = tensors.iter().map(|t| t.data.to_le_bytes()).collect();
    let views = tensors
        .iter()
        .zip(&bytes)
        .map(|(t, (dtype, data))| {
            TensorView::new(*dtype, t.shape.clone(), data)
                .map(|view| (t.key.as_str(), view))
                .map_err(|e| error(format!("{}: {e}", t.key)))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let metadata = HashMap::from([
        ("format".to_string(), "pt".to_string()),
        ("library".to_string(), M::LIBRARY.to_string()),
        ("producer".to_string(), "burnacc".to_string()),
        ("reference_config".to_string(), reference_config.to_string()),
    ]);
    let serialized =
        safetensors::serialize(views, Some(metadata)).map_err(|e| error(e.to_string()))?;

    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let partial = path.with_file_name(format!(".{name}.partial"));
    let write = || -> std::io::Result<()> {
        let mut file = std::fs::File::create(&partial)?;
        file.write_all(&serialized)?;
        file.sync_all()?;
        std::fs::rename(&partial, path)
    };
    write().map_err(|e| error(e.to_string()))?;
    Ok(tensors.len())
}

impl ReferenceData {
    /// The values as safetensors stores them: dtype and little-endian bytes.
    fn to_le_bytes(&self) -> (Dtype, Vec<u8>) {
        match self {
            ReferenceData::F32(v) => (Dtype::F32, v.iter().flat_map(|x| x.to_le_bytes()).collect()),
            ReferenceData::I64(v) => (Dtype::I64, v.iter().flat_map(|x| x.to_le_bytes()).collect()),
        }
    }
}
