//! One training run on one backend stack: model init, optimizer, loop, evaluation, saving.

use super::data::DataSources;
use super::eval::{EvalResult, evaluate};
use super::init::init_model;
use super::step_loop::{LoopStats, inference_model, train_steps};
use crate::log::JsonlLog;
use crate::progress::Progress;
use crate::recipe::{OptimSection, OptimizerName, Recipe};
use crate::stack::{Stack, StackTask};
use anyhow::{Context, Result};
use burn::module::Module;
use burn::record::{FullPrecisionSettings, NamedMpkFileRecorder};
use burn::tensor::backend::AutodiffBackend;
use burnacc_amp::optim::{AdamConfig, SgdConfig, SyncFreeOptimizer};
use burnacc_amp::scaler::GradScaler;
use burnacc_checkpoint::CheckpointBackend;
use burnacc_models::{ResNet, ResNetConfig};
use std::path::{Path, PathBuf};

/// Everything a run needs besides the backend.
pub struct TrainTask<'a> {
    /// The checked recipe.
    pub recipe: &'a Recipe,
    /// Loaders of the training and held-out splits.
    pub data: &'a DataSources,
    /// The run's folder (fresh).
    pub run_dir: &'a Path,
    /// No progress bar.
    pub quiet: bool,
}

/// What a run produced.
#[derive(Clone, Debug, serde::Serialize)]
pub struct TrainOutcome {
    /// Loop measurements.
    pub stats: LoopStats,
    /// Held-out accuracy, if evaluated.
    pub eval: Option<EvalResult>,
    /// Where the model was saved, if it was.
    pub model_file: Option<PathBuf>,
}

/// The network a recipe describes, for `num_classes` outputs and `channels` input channels.
pub fn model_config(recipe: &Recipe, num_classes: usize, channels: usize) -> ResNetConfig {
    ResNetConfig::from_name(recipe.model.name.as_str(), num_classes)
        .expect("the recipe schema only admits known model names")
        .with_in_channels(channels)
        .with_base_width(recipe.model.base_width)
        .with_small_input_stem(recipe.model.small_input_stem)
}

impl StackTask for TrainTask<'_> {
    type Output = Result<TrainOutcome>;

    fn run<B: CheckpointBackend>(self, stack: Stack, device: B::Device) -> Result<TrainOutcome> {
        let config = model_config(self.recipe, self.data.num_classes, self.data.channels);
        let model: ResNet<B> = init_model(&config, self.recipe.train.seed, &device)?;
        // Seeds what the device draws itself during training (e.g. dropout masks).
        B::seed(&device, self.recipe.train.seed);
        let optim = build_optimizer::<B>(&self.recipe.optim)?;
        let scaler = GradScaler::<B>::new(self.recipe.amp.scaler_config(), &device)
            .context("amp: invalid loss-scaler settings")?;
        self.finish(model, optim, scaler, stack, &device)
    }
}

/// The recipe's optimizer, sync-free (burnacc-amp): the same optimizer runs in every mode, so
/// modes differ only in the backend.
pub fn build_optimizer<B: AutodiffBackend>(
    o: &OptimSection,
) -> Result<Box<dyn SyncFreeOptimizer<ResNet<B>, B>>> {
    let [beta1, beta2] = o.betas;
    let adam = |base: AdamConfig| AdamConfig {
        betas: (beta1, beta2),
        eps: o.eps,
        weight_decay: o.weight_decay,
        ..base
    };
    Ok(match o.name {
        OptimizerName::Sgd => Box::new(
            SgdConfig {
                momentum: o.momentum,
                dampening: 0.0,
                weight_decay: o.weight_decay,
                nesterov: o.nesterov,
            }
            .init::<B>()?,
        ),
        OptimizerName::Adam => Box::new(adam(AdamConfig::adam()).init::<B>()?),
        OptimizerName::Adamw => Box::new(adam(AdamConfig::adamw()).init::<B>()?),
    })
}

impl TrainTask<'_> {
    fn finish<B: CheckpointBackend>(
        self,
        model: ResNet<B>,
        optim: Box<dyn SyncFreeOptimizer<ResNet<B>, B>>,
        scaler: GradScaler<B>,
        stack: Stack,
        device: &B::Device,
    ) -> Result<TrainOutcome> {
        let mut log = JsonlLog::create(&self.run_dir.join("log.jsonl"))?;
        let progress = Progress::new(self.recipe.train.max_steps, self.quiet);
        let (model, stats) = train_steps(
            model,
            optim,
            scaler,
            self.recipe,
            &self.data.train,
            stack,
            device,
            &mut log,
            &progress,
        )?;
        progress.finish();

        let eval = match (&self.data.eval, self.recipe.train.eval) {
            (Some(loader), true) => {
                let inner = inference_model(&model);
                Some(evaluate(
                    &inner,
                    loader,
                    self.recipe.train.eval_max_batches,
                    device,
                )?)
            }
            _ => None,
        };
        let model_file = if self.recipe.train.save_model {
            Some(save_model(model, &self.run_dir.join("model.mpk"))?)
        } else {
            None
        };
        Ok(TrainOutcome {
            stats,
            eval,
            model_file,
        })
    }
}

/// Saves `model` with Burn's named MessagePack recorder (f32), atomically, at `path` (`*.mpk`).
fn save_model<B: AutodiffBackend>(model: ResNet<B>, path: &Path) -> Result<PathBuf> {
    let recorder = NamedMpkFileRecorder::<FullPrecisionSettings>::new();
    // The recorder sets the `.mpk` extension itself: write `.<stem>-partial.mpk`, then rename.
    let stem = path.file_stem().unwrap_or_default().to_string_lossy();
    let partial = path.with_file_name(format!(".{stem}-partial.mpk"));
    model
        .save_file(&partial, &recorder)
        .with_context(|| format!("cannot save the model to {}", partial.display()))?;
    std::fs::rename(&partial, path)
        .with_context(|| format!("cannot move the saved model to {}", path.display()))?;
    Ok(path.to_owned())
}
