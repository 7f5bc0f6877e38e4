//! One training run on one backend stack: model init, optimizer, loop, evaluation, saving.

use super::Data;
use super::batch::Upload;
use super::bert_init::PretrainedSummary;
use super::classify::{Classify, ClassifyCheckpointed};
use super::eval::{EvalResult, evaluate};
use super::family::{FamilyTask, HostData, ModelFamily, with_family};
use super::init::seed_device;
use super::peering::Peering;
use super::source::BatchSource;
use super::step::Stepper;
use super::step_loop::{
    Evaluator, LoopRun, LoopStats, Persist, StepHooks, inference_model, train_steps,
};
use crate::log::JsonlLog;
use crate::profile::Profiler;
use crate::progress::Progress;
use crate::recipe::{OptimSection, OptimizerName, Recipe, recipe_toml};
use crate::resume::{CheckpointWriter, LoopStart, Resume};
use crate::run_dir::write_atomic;
use crate::stack::{BackendStack, Stack, StackDevice, StackTask};
use anyhow::{Context, Result};
use burn::module::AutodiffModule;
use burn::record::{FullPrecisionSettings, NamedMpkFileRecorder};
use burn::tensor::backend::AutodiffBackend;
use burnacc_amp::optim::{AdamConfig, SgdConfig, SyncFreeOptimizer};
use burnacc_checkpoint::CheckpointBackend;
use burnacc_models::{ReferenceExport, save_reference};
use std::path::{Path, PathBuf};

/// Everything a run needs besides the backend.
pub struct TrainTask<'a> {
    /// The checked recipe.
    pub recipe: &'a Recipe,
    /// Loaders of the training and held-out splits.
    pub data: &'a Data,
    /// The run's folder (fresh); `None` on data-parallel ranks other than 0, which log,
    /// evaluate and save nothing.
    pub run_dir: Option<&'a Path>,
    /// No progress bar.
    pub quiet: bool,
    /// `--profile`: the window of steps to trace.
    pub profile: Option<ProfileRequest>,
    /// This replica's place in a data-parallel run (processes or threads).
    pub peering: Option<Peering<'a>>,
    /// The checkpoint to continue from (`--resume`); every replica loads it.
    pub resume: Option<&'a Resume>,
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
    /// What the starting model imported (`model.pretrained` / `model.weights`).
    pub pretrained: Option<PretrainedSummary>,
}

/// `train --profile`: how many steps to trace, and where to write `trace.json`.
#[derive(Clone, Debug)]
pub struct ProfileRequest {
    /// Steps traced.
    pub steps: usize,
    /// Folder of `trace.json` (default: the run folder).
    pub folder: Option<PathBuf>,
}

/// Steps run before the profiled window, when the run is long enough: the first steps compile
/// and autotune kernels.
const PROFILE_SKIP: usize = 2;

impl StackTask for TrainTask<'_> {
    type Output = Result<TrainOutcome>;

    fn run<S: BackendStack>(self, stack: Stack, device: StackDevice<S>) -> Result<TrainOutcome> {
        self.train::<S::Backend>(stack, device)
    }
}

impl TrainTask<'_> {
    /// Builds the recipe's model on `B` and trains it.
    fn train<B: CheckpointBackend>(self, stack: Stack, device: B::Device) -> Result<TrainOutcome> {
        let name = self.recipe.model.name;
        with_family::<B, _>(
            name,
            TrainFamily {
                task: self,
                stack,
                device,
            },
        )
    }
}

/// A training run waiting for its model family.
struct TrainFamily<'a, B: CheckpointBackend> {
    task: TrainTask<'a>,
    stack: Stack,
    device: B::Device,
}

impl<B: CheckpointBackend> FamilyTask<B> for TrainFamily<'_, B> {
    type Output = Result<TrainOutcome>;

    fn run<F: ModelFamily<B>>(self) -> Result<TrainOutcome> {
        let TrainFamily {
            task,
            stack,
            device,
        } = self;
        let recipe = task.recipe;
        let sources = F::Host::sources(task.data).with_context(|| {
            format!(
                "data.dataset: {} does not feed model {}",
                recipe.data.dataset.as_str(),
                recipe.model.name.as_str()
            )
        })?;
        let config = F::config(recipe, sources.classes, sources.channels)?;
        let (model, pretrained) = F::init(&config, recipe, recipe.train.seed, &device)?;
        task.finish(
            model,
            pretrained,
            F::reference_config(&config),
            &sources.train,
            sources.eval.as_ref(),
            stack,
            &device,
        )
    }
}

/// Says what the starting model imported.
fn report_pretrained(pretrained: Option<&PretrainedSummary>) {
    if let Some(p) = pretrained {
        eprintln!(
            "model: {} tensors from {}; new: {}; unused: {}",
            p.loaded,
            p.file.display(),
            list_or_none(&p.fresh),
            list_or_none(&p.unused)
        );
    }
}

fn list_or_none(items: &[String]) -> String {
    if items.is_empty() {
        "none".into()
    } else {
        items.join(", ")
    }
}

/// The recipe's optimizer, sync-free (burnacc-amp): the same optimizer runs in every mode, so
/// modes differ only in the backend.
pub fn build_optimizer<B: AutodiffBackend, M: AutodiffModule<B>>(
    o: &OptimSection,
) -> Result<Box<dyn SyncFreeOptimizer<M, B>>> {
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
    /// Trains `model` on `train`, evaluates it on `eval`, saves it (`model.mpk`, and
    /// `model.safetensors` under the reference implementation's keys, built by the JSON
    /// arguments `reference_config`).
    #[allow(clippy::too_many_arguments)]
    fn finish<B, M, H, S>(
        self,
        model: M,
        pretrained: Option<PretrainedSummary>,
        reference_config: String,
        train: &S,
        eval: Option<&S>,
        stack: Stack,
        device: &B::Device,
    ) -> Result<TrainOutcome>
    where
        B: CheckpointBackend,
        M: ClassifyCheckpointed<B, H> + AutodiffModule<B>,
        M::InnerModule: Classify<B::InnerBackend, H> + ReferenceExport,
        H: Upload<B> + Upload<B::InnerBackend>,
        S: BatchSource<H> + Clone + Send + 'static,
    {
        report_pretrained(pretrained.as_ref());
        // Seeds what the device draws itself during training (e.g. dropout masks).
        seed_device::<B>(device, self.recipe.train.seed);
        let mut stepper = Stepper::new(self.recipe, device)?;
        // Everything is loaded and checked before the run folder changes.
        let (model, start) = match self.resume {
            Some(resume) => (resume.restore(model, &mut stepper)?, resume.start()),
            None => (model, LoopStart::default()),
        };
        let mut log = self.open_log(start.step)?;
        let writer = self
            .run_dir
            .and_then(|dir| CheckpointWriter::new(self.recipe, dir));
        let progress = match self.run_dir {
            Some(_) => Progress::new(self.recipe.train.max_steps, self.quiet),
            None => Progress::silent(),
        };
        progress.resumed_at(start.step);
        let mut profiler = self.profiler()?;
        let peer = match self.peering {
            Some(peering) => Some(peering.join::<B, M>(&self.recipe.ddp, &model, device)?),
            None => None,
        };
        // Rank 0 evaluates (every `train.eval_every` steps and after the last with `train.eval`).
        let max_batches = self.recipe.train.eval_max_batches;
        let evaluate_model = eval.filter(|_| self.run_dir.is_some()).map(|loader| {
            move |model: &M| evaluate(&inference_model(model), loader, max_batches, device)
        });
        let evaluator = evaluate_model.as_ref().map(|f| f as Evaluator<'_, M>);
        let run = LoopRun {
            recipe: self.recipe,
            stack,
            device,
            log: &mut log,
            progress: &progress,
            hooks: StepHooks {
                profiler: profiler.as_mut(),
                peer: peer.as_ref(),
            },
        };
        let persist = Persist {
            start,
            writer: writer.as_ref(),
            evaluator,
        };
        let (model, stats) = train_steps(model, stepper, train.clone(), run, persist)?;
        progress.finish();
        if let Some(peer) = peer {
            peer.finish()?;
        }
        self.outcome(model, stats, pretrained, &reference_config)
    }

    /// What the run produced; rank 0 saves the model (every rank holds the same one).
    fn outcome<B, M>(
        &self,
        model: M,
        stats: LoopStats,
        pretrained: Option<PretrainedSummary>,
        reference_config: &str,
    ) -> Result<TrainOutcome>
    where
        B: AutodiffBackend,
        M: AutodiffModule<B>,
        M::InnerModule: ReferenceExport,
    {
        let model_file = match (self.run_dir, self.recipe.train.save_model) {
            (Some(run_dir), true) => {
                Some(self.save(model, stats.steps, reference_config, run_dir)?)
            }
            _ => None,
        };
        Ok(TrainOutcome {
            eval: self.run_dir.and(stats.final_eval),
            stats,
            model_file,
            pretrained,
        })
    }
}

impl TrainTask<'_> {
    /// `log.jsonl` of the run folder: new, or continued after step `resumed_at` (the
    /// recipe, which `--set` may have changed, is written again then); nothing without a run
    /// folder.
    fn open_log(&self, resumed_at: usize) -> Result<JsonlLog> {
        Ok(match (self.run_dir, self.resume) {
            (Some(dir), Some(_)) => {
                write_atomic(
                    &dir.join("recipe.toml"),
                    recipe_toml(self.recipe).as_bytes(),
                )?;
                JsonlLog::resume(&dir.join("log.jsonl"), resumed_at)?
            }
            (Some(dir), None) => JsonlLog::create(&dir.join("log.jsonl"))?,
            (None, _) => JsonlLog::discard(),
        })
    }

    /// `--profile`'s profiler, its folder made before any step runs (as the run folder is).
    fn profiler(&self) -> Result<Option<Profiler>> {
        let Some(p) = &self.profile else {
            return Ok(None);
        };
        let window = Profiler::window(self.recipe.train.max_steps, PROFILE_SKIP, p.steps);
        let run_dir = self.run_dir.context("--profile: only rank 0 profiles")?;
        let folder = p.folder.clone().unwrap_or_else(|| run_dir.to_owned());
        std::fs::create_dir_all(&folder)
            .with_context(|| format!("--profile-folder {}: cannot create it", folder.display()))?;
        Ok(Some(Profiler::new(window, folder.join("trace.json"))))
    }

    /// Saves the trained `model` after `steps` steps in `run_dir`: `model.safetensors` under
    /// the reference implementation's keys (built by the JSON arguments `reference_config`),
    /// then `model.mpk`. The loop wrote the last step's checkpoint first, which refuses
    /// weights that are not finite: a diverged model never gets here.
    fn save<B, M>(
        &self,
        model: M,
        steps: usize,
        reference_config: &str,
        run_dir: &Path,
    ) -> Result<PathBuf>
    where
        B: AutodiffBackend,
        M: AutodiffModule<B>,
        M::InnerModule: ReferenceExport,
    {
        // Batch norm's `num_batches_tracked`: the train-mode forward passes.
        let batches = (steps * self.recipe.train.accumulate) as i64;
        let export = run_dir.join("model.safetensors");
        save_reference(&inference_model(&model), &export, batches, reference_config)?;
        save_model(model, &run_dir.join("model.mpk"))
    }
}

/// Saves `model` with Burn's named MessagePack recorder (f32), atomically, at `path` (`*.mpk`).
fn save_model<B: AutodiffBackend, M: AutodiffModule<B>>(model: M, path: &Path) -> Result<PathBuf> {
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
