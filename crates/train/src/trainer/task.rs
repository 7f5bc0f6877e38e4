//! One training run on one backend stack: model init, optimizer, loop, evaluation, saving.

use super::data::DataSources;
use super::eval::{EvalResult, evaluate};
use super::init::init_model;
use super::step_loop::{LoopStats, inference_model, train_steps};
use crate::log::JsonlLog;
use crate::progress::Progress;
use crate::recipe::{OptimizerName, Recipe};
use crate::stack::{Stack, StackTask};
use anyhow::{Context, Result};
use burn::module::Module;
use burn::optim::decay::WeightDecayConfig;
use burn::optim::momentum::MomentumConfig;
use burn::optim::{AdamConfig, AdamWConfig, Optimizer, SgdConfig};
use burn::record::{FullPrecisionSettings, NamedMpkFileRecorder};
use burn::tensor::backend::AutodiffBackend;
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

    fn run<B: AutodiffBackend>(self, stack: Stack, device: B::Device) -> Result<TrainOutcome> {
        let config = model_config(self.recipe, self.data.num_classes, self.data.channels);
        let model: ResNet<B> = init_model(&config, self.recipe.train.seed, &device)?;
        // Seeds what the device draws itself during training (e.g. dropout masks).
        B::seed(&device, self.recipe.train.seed);
        let o = &self.recipe.optim;
        let decay = (o.weight_decay > 0.0).then(|| WeightDecayConfig::new(o.weight_decay as f32));
        match o.name {
            OptimizerName::Sgd => {
                let momentum = (o.momentum > 0.0).then_some(MomentumConfig {
                    momentum: o.momentum,
                    dampening: 0.0,
                    nesterov: o.nesterov,
                });
                let optim = SgdConfig::new()
                    .with_momentum(momentum)
                    .with_weight_decay(decay)
                    .init();
                self.finish(model, optim, stack, &device)
            }
            OptimizerName::Adam => {
                let optim = AdamConfig::new()
                    .with_beta_1(o.betas[0] as f32)
                    .with_beta_2(o.betas[1] as f32)
                    .with_epsilon(o.eps as f32)
                    .with_weight_decay(decay)
                    .init();
                self.finish(model, optim, stack, &device)
            }
            OptimizerName::Adamw => {
                let optim = AdamWConfig::new()
                    .with_beta_1(o.betas[0] as f32)
                    .with_beta_2(o.betas[1] as f32)
                    .with_epsilon(o.eps as f32)
                    .with_weight_decay(o.weight_decay as f32)
                    .init();
                self.finish(model, optim, stack, &device)
            }
        }
    }
}

impl TrainTask<'_> {
    fn finish<B, O>(
        self,
        model: ResNet<B>,
        optim: O,
        stack: Stack,
        device: &B::Device,
    ) -> Result<TrainOutcome>
    where
        B: AutodiffBackend,
        O: Optimizer<ResNet<B>, B>,
    {
        let mut log = JsonlLog::create(&self.run_dir.join("log.jsonl"))?;
        let progress = Progress::new(self.recipe.train.max_steps, self.quiet);
        let (model, stats) = train_steps(
            model,
            optim,
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
