//! Training state that survives a stop: checkpoints of everything a run needs to continue
//! exactly where it was, and `train --resume`.
//!
//! A checkpoint (`<run>/checkpoints/step-<S>/`) holds:
//! - `model.safetensors`: the model, f32 as trained (parameters and running statistics);
//! - `optimizer.safetensors`: the optimizer's moments or momentum buffers and step counters;
//! - `recipe.toml`: the resolved recipe;
//! - `state.json`: the step, the data order's position (epoch, batches of it done, seed), the
//!   loss scaler's scale and growth tracker, the skipped-step count, and each file's SHA-256;
//! - `COMPLETE`, written last (see [`folder`] for the write order).
//!
//! Nothing else is needed to continue bit for bit: the learning rate is a function of the
//! step, every step's random draws are seeded from `train.seed` and the step, and the data
//! order of an epoch from `train.seed` and the epoch.

mod folder;
mod manifest;
mod tensors;

pub use folder::{
    CHECKPOINTS, MANIFEST, MARKER, checkpoint_dir, complete_checkpoints, read_checkpoint,
    write_checkpoint,
};
pub use manifest::{FORMAT, FileDigest, Manifest, ScalerState};
pub use tensors::{load_model, load_optimizer, model_bytes, non_finite_tensors, optimizer_bytes};

use crate::recipe::{Recipe, parse_recipe, recipe_toml, training_key_changes};
use crate::trainer::Stepper;
use anyhow::{Context, Result, anyhow, bail};
use burn::module::AutodiffModule;
use burn::tensor::Tensor;
use burnacc_amp::scaler::GradScalerState;
use burnacc_checkpoint::CheckpointBackend;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The model's tensors in a checkpoint.
pub const MODEL_FILE: &str = "model.safetensors";
/// The optimizer's state in a checkpoint.
pub const OPTIMIZER_FILE: &str = "optimizer.safetensors";
/// The resolved recipe in a checkpoint.
pub const RECIPE_FILE: &str = "recipe.toml";

/// Where the training loop starts: step 0 of epoch 0, or a checkpoint's position.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LoopStart {
    /// Optimizer steps already done.
    pub step: usize,
    /// The epoch being served.
    pub epoch: u64,
    /// Batches of `epoch` already trained on.
    pub batches_in_epoch: usize,
    /// Steps the loss scaler skipped so far (loss scaling on).
    pub skipped_steps: Option<u64>,
}

/// `(run folder, checkpoint folder)` of `--resume path`: `path` is a checkpoint folder
/// (`.../checkpoints/step-<S>`), or a run folder, whose latest complete checkpoint is taken.
/// Reads no checkpoint file.
pub fn locate(path: &Path) -> Result<(PathBuf, PathBuf)> {
    if !path.is_dir() {
        bail!("--resume {}: no such folder", path.display());
    }
    let is_checkpoint = path.join(MARKER).exists()
        || path.join(MANIFEST).exists()
        || path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("step-"));
    if is_checkpoint {
        let run_dir = path
            .parent()
            .and_then(Path::parent)
            .ok_or_else(|| anyhow!("--resume {}: not inside a run folder", path.display()))?;
        return Ok((run_dir.to_owned(), path.to_owned()));
    }
    let latest = complete_checkpoints(path)?.pop().ok_or_else(|| {
        anyhow!(
            "--resume {}: no complete checkpoint under {} (write them with \
             train.save_every, or train.save_model at the end)",
            path.display(),
            path.join(CHECKPOINTS).display()
        )
    })?;
    Ok((path.to_owned(), latest.1))
}

/// A checkpoint read from disk, every file checked against its manifest: what `--resume`
/// continues from.
pub struct Resume {
    /// The run folder the checkpoint belongs to; the resumed run continues in it.
    pub run_dir: PathBuf,
    /// The checkpoint's folder.
    pub dir: PathBuf,
    /// Its manifest.
    pub manifest: Manifest,
    files: BTreeMap<String, Vec<u8>>,
}

impl Resume {
    /// Reads the checkpoint at `path` (see [`locate`]), every file checked against its
    /// manifest. Errors name the folder or file and what is wrong with it; a corrupt latest
    /// checkpoint is an error, not a reason to take an older one silently.
    pub fn open(path: &Path) -> Result<Self> {
        let (run_dir, dir) = locate(path)?;
        let (manifest, files) = read_checkpoint(&dir)?;
        for name in [MODEL_FILE, OPTIMIZER_FILE, RECIPE_FILE] {
            if !files.contains_key(name) {
                bail!(
                    "{}: the checkpoint has no {name} in its manifest",
                    dir.display()
                );
            }
        }
        Ok(Self {
            run_dir,
            dir,
            manifest,
            files,
        })
    }

    /// The checkpoint's recipe file.
    pub fn recipe_file(&self) -> PathBuf {
        self.dir.join(RECIPE_FILE)
    }

    /// Refuses `recipe` (from `file`) when it would not continue this checkpoint's training:
    /// a training-relevant key differs (all are named), or `train.max_steps` is already
    /// reached.
    pub fn check_recipe(&self, recipe: &Recipe, file: &Path) -> Result<()> {
        let saved_file = self.recipe_file();
        let text = std::str::from_utf8(&self.files[RECIPE_FILE])
            .with_context(|| format!("{} is not UTF-8", saved_file.display()))?;
        let saved = parse_recipe(text, &saved_file, &[])?;
        let changes = training_key_changes(&saved, recipe);
        if !changes.is_empty() {
            let lines: Vec<String> = changes.iter().map(|c| format!("  {c}")).collect();
            bail!(
                "{} does not continue the training of the checkpoint {}; these keys differ \
                 from its recipe:\n{}",
                file.display(),
                self.dir.display(),
                lines.join("\n")
            );
        }
        if self.manifest.step >= recipe.train.max_steps {
            bail!(
                "key `train.max_steps` in {}: the checkpoint {} is at step {}; nothing is left \
                 to train (raise train.max_steps)",
                file.display(),
                self.dir.display(),
                self.manifest.step
            );
        }
        Ok(())
    }

    /// Where the loop continues.
    pub fn start(&self) -> LoopStart {
        LoopStart {
            step: self.manifest.step,
            epoch: self.manifest.epoch,
            batches_in_epoch: self.manifest.batches_in_epoch,
            skipped_steps: self.manifest.skipped_steps,
        }
    }

    /// `model` with the checkpoint's weights, and `stepper` with its step count, optimizer
    /// state and loss scaler. Refused, naming the file, for a checkpoint of another model or
    /// shape; on error `stepper` is unchanged.
    pub fn restore<B: CheckpointBackend, M: AutodiffModule<B>>(
        &self,
        model: M,
        stepper: &mut Stepper<B, M>,
    ) -> Result<M> {
        let model_file = self.dir.join(MODEL_FILE);
        let model = load_model(model, self.files[MODEL_FILE].clone(), &model_file)?;
        let optimizer_file = self.dir.join(OPTIMIZER_FILE);
        let optimizer = load_optimizer(&self.files[OPTIMIZER_FILE], &optimizer_file, &model)?;
        let scaler = self.manifest.loss_scaler.map(|s| GradScalerState {
            scale: s.scale,
            growth_tracker: s.growth_tracker,
        });
        stepper
            .restore(self.manifest.step, optimizer, scaler)
            .with_context(|| format!("{}", self.dir.display()))?;
        Ok(model)
    }
}

/// Writes a run's checkpoints: every `train.save_every` steps, and at the last step with
/// `train.save_model`; keeps the newest `train.keep_last`.
pub struct CheckpointWriter {
    run_dir: PathBuf,
    every: usize,
    at_end: bool,
    keep_last: usize,
    recipe: String,
    model: String,
    data_seed: u64,
}

impl CheckpointWriter {
    /// The writer of `recipe`'s checkpoints into `run_dir`, if it writes any.
    pub fn new(recipe: &Recipe, run_dir: &Path) -> Option<Self> {
        let t = &recipe.train;
        (t.save_every > 0 || t.save_model).then(|| Self {
            run_dir: run_dir.to_owned(),
            every: t.save_every,
            at_end: t.save_model,
            keep_last: t.keep_last,
            recipe: recipe_toml(recipe),
            model: recipe.model.name.as_str().to_owned(),
            data_seed: t.seed,
        })
    }

    /// Whether a checkpoint is written after `done` of `total` steps.
    pub fn due(&self, done: usize, total: usize) -> bool {
        (self.every > 0 && done.is_multiple_of(self.every)) || (self.at_end && done == total)
    }

    /// Writes the checkpoint of the state after `position.step` steps (reads the device).
    pub fn write<B: CheckpointBackend, M: AutodiffModule<B>>(
        &self,
        model: &M,
        stepper: &Stepper<B, M>,
        position: LoopStart,
    ) -> Result<PathBuf> {
        // Burn's `RunningState` (batch norm's running statistics) keeps the latest update
        // aside until it is synced, which `into_record` does and a visit (what the store
        // reads) does not. The clone shares the states, so this syncs `model`'s.
        let _ = model.clone().into_record();
        let weights = model_bytes::<B, M>(model)?;
        let non_finite = non_finite_tensors(&weights)?;
        if !non_finite.is_empty() {
            bail!(
                "step {}: the model's weights hold NaN or infinite values (in {}); training \
                 diverged, and no checkpoint or model is written for it (lower `optim.lr`, or \
                 set `train.on_nonfinite = \"skip\"`)",
                position.step,
                non_finite.join(", ")
            );
        }
        let optimizer = stepper.optimizer_state()?;
        let files = vec![
            (MODEL_FILE, weights),
            (OPTIMIZER_FILE, optimizer_bytes::<B, M>(&optimizer, model)?),
            (RECIPE_FILE, self.recipe.clone().into_bytes()),
        ];
        let manifest = Manifest {
            format: FORMAT,
            step: position.step,
            epoch: position.epoch,
            batches_in_epoch: position.batches_in_epoch,
            data_seed: self.data_seed,
            model: self.model.clone(),
            optimizer: optimizer.kind,
            loss_scaler: stepper.scaler_state().map(|s| ScalerState {
                scale: s.scale,
                growth_tracker: s.growth_tracker,
            }),
            skipped_steps: position.skipped_steps,
            files: BTreeMap::new(),
        };
        write_checkpoint(
            &self.run_dir,
            position.step,
            files,
            manifest,
            self.keep_last,
        )
    }
}

/// Steps the loss scaler skipped, read from its device counter (f32 `[1]`).
pub fn read_skipped<B: burn::tensor::backend::Backend>(count: &Tensor<B, 1>) -> u64 {
    count
        .to_data()
        .iter::<f64>()
        .next()
        .expect("the counter has one element") as u64
}
