//! `state.json`: what a checkpoint holds besides tensors — where training stands (step, data
//! position, loss scaler) and the size and SHA-256 of every file of the checkpoint.

use anyhow::{Result, bail};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::Path;

/// The manifest format this build writes and reads.
pub const FORMAT: u32 = 1;

/// Where training stood when a checkpoint was written.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// [`FORMAT`].
    pub format: u32,
    /// Optimizer steps done; training resumes at the next. The learning-rate schedule's
    /// position and every later step's random seeds follow from it.
    pub step: usize,
    /// The epoch of the data order being served.
    pub epoch: u64,
    /// Batches of `epoch` already trained on.
    pub batches_in_epoch: usize,
    /// `train.seed`: the data order's shuffle and augmentation seed (also in the recipe).
    pub data_seed: u64,
    /// `model.name` of the recipe.
    pub model: String,
    /// The optimizer's state kind: `sgd`, `adam` or `adamw`.
    pub optimizer: String,
    /// The loss scaler (loss scaling on).
    pub loss_scaler: Option<ScalerState>,
    /// Steps the loss scaler skipped so far (loss scaling on).
    pub skipped_steps: Option<u64>,
    /// Every other file of the checkpoint (written by `write_checkpoint`).
    pub files: BTreeMap<String, FileDigest>,
}

/// The loss scaler's state, as PyTorch's `GradScaler.state_dict()` (`scale`,
/// `_growth_tracker`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScalerState {
    /// The current scale.
    pub scale: f32,
    /// Consecutive finite steps since the last growth or backoff.
    pub growth_tracker: u32,
}

/// A file's size and SHA-256 (lowercase hex).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileDigest {
    /// Bytes.
    pub bytes: u64,
    /// SHA-256, lowercase hex.
    pub sha256: String,
}

impl FileDigest {
    /// The digest of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        let hash = Sha256::digest(bytes);
        Self {
            bytes: bytes.len() as u64,
            sha256: hash.iter().map(|b| format!("{b:02x}")).collect(),
        }
    }
}

impl Manifest {
    /// Refuses a manifest of another format, naming `path`.
    pub fn check_format(&self, path: &Path) -> Result<()> {
        if self.format != FORMAT {
            bail!(
                "{}: checkpoint format {} (this build reads format {FORMAT})",
                path.display(),
                self.format
            );
        }
        Ok(())
    }
}
