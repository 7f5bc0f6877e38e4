//! Runs a recipe end to end: check, resolve the stack, load data, train, evaluate, save.

mod auto_checkpoint;
mod batch;
mod bert_init;
mod classify;
mod data;
mod eval;
mod family;
mod init;
mod peering;
mod prefetch;
mod source;
mod step;
mod step_loop;
mod task;
mod text_data;

pub use auto_checkpoint::{AutoCheckpointSummary, BlockProbe, measure_blocks, plan_auto};
pub use batch::{
    ImageBatch, PixelTransfer, TextInputBatch, Upload, normalize_on_device, upload_pixels,
};
pub use bert_init::{PretrainedSummary, bert_config, init_bert};
pub use classify::{BlockFilter, Classify, ClassifyCheckpointed};
pub use data::{ImageSources, build_image_data};
pub use eval::{EvalResult, evaluate};
pub use family::{
    BertFamily, FamilyTask, HostData, ModelFamily, ResNetFamily, Sources, SwinFamily,
    bert_forward_checkpointed, bert_forward_probed, bert_forward_selected, forward_checkpointed,
    forward_probed, forward_selected, model_config, swin_forward_probed, swin_forward_selected,
    swin_model_config, synthetic_text, with_family,
};
pub use init::{
    init_model, init_on_host, init_resnet, init_swin, seed_device, to_device, with_host_rng,
};
pub use peering::{Peering, process_stack, resolve_devices};
pub use prefetch::{DeviceBatches, Epochs, Placed};
pub use source::{BatchSource, EpochBatches};
pub use step::{GradientSync, Phase, StepOutput, Stepper};
pub use step_loop::{
    BlockPlan, Evaluator, LoopRun, LoopStats, Persist, StepHooks, median, train_steps,
};
pub use task::{ProfileRequest, TrainOutcome, TrainTask, build_optimizer};
pub use text_data::{PaddingReport, TEXT_SPLIT_SEED, TextSources, build_text_data};

use crate::kernel_cache::configure_kernel_caches;
use crate::precision::check_amp_dtype;
use crate::recipe::{Recipe, load_recipe, recipe_toml};
use crate::resume::Resume;
use crate::run_dir::{fresh_run_dir, write_atomic};
use crate::stack::route_kernels;
use crate::stack::{Stack, UnusedKernel, resolve_stack, unused_kernels, with_stack};
use anyhow::Result;
use burnacc_datasets::Shard;
use burnacc_ddp::ProcessGroup;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Runs in one process take turns. A run seeds and draws from the backends' random generators
/// (initial weights; every step and block, for dropout and its replay), which are shared by the
/// whole process (Flex) or by a device, so two runs at once would change each other's weights
/// and masks.
static RUNS: Mutex<()> = Mutex::new(());

/// How `train` was asked to run.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// `--set key=value` overrides, in order.
    pub sets: Vec<String>,
    /// No progress bar.
    pub quiet: bool,
    /// `--profile`: trace a window of steps into `trace.json`.
    pub profile: Option<ProfileRequest>,
    /// This process's place in a data-parallel run of several processes (`launch` sets it in
    /// the environment; `ProcessGroup::from_env`). `None`: a run of one process.
    pub process: Option<ProcessGroup>,
    /// `--resume`: a run folder (its latest complete checkpoint) or a checkpoint folder to
    /// continue from, in its run folder.
    pub resume: Option<PathBuf>,
}

impl RunOptions {
    /// Whether this process logs, shows progress and writes the run folder: rank 0, or the only
    /// process.
    pub fn is_leader(&self) -> bool {
        self.process.as_ref().is_none_or(|p| p.rank == 0)
    }
}

/// The training and held-out data of a recipe: images or text.
#[derive(Clone)]
pub enum Data {
    /// Image folders, mock ImageNet, Fashion-MNIST.
    Images(ImageSources),
    /// Tokenized sentiment corpora.
    Text(TextSources),
}

impl Data {
    /// Reads (or generates) the recipe's dataset and builds its loaders.
    pub fn build(recipe: &Recipe) -> Result<Self> {
        Ok(if recipe.data.dataset.is_text() {
            Data::Text(build_text_data(recipe)?)
        } else {
            Data::Images(build_image_data(recipe)?)
        })
    }

    /// The same data with the training loader serving only `shard`'s share of each epoch
    /// (data-parallel replicas); the held-out loader still serves everything (rank 0
    /// evaluates). The datasets themselves are shared, not read again.
    pub fn sharded(&self, shard: Shard) -> Self {
        let mut data = self.clone();
        match &mut data {
            Data::Images(d) => d.train = d.train.clone().sharded(shard),
            Data::Text(d) => d.train = d.train.clone().sharded(shard),
        }
        data
    }

    /// Training samples per epoch.
    pub fn train_samples(&self) -> usize {
        match self {
            Data::Images(d) => d.train_samples,
            Data::Text(d) => d.train_samples,
        }
    }

    /// Held-out samples.
    pub fn eval_samples(&self) -> usize {
        match self {
            Data::Images(d) => d.eval_samples,
            Data::Text(d) => d.eval_samples,
        }
    }

    /// Classes the model outputs.
    pub fn num_classes(&self) -> usize {
        match self {
            Data::Images(d) => d.num_classes,
            Data::Text(d) => d.num_classes,
        }
    }

    /// Images skipped as undecodable so far (0 for text).
    pub fn skipped(&self) -> u64 {
        match self {
            Data::Images(d) => d.skipped(),
            Data::Text(_) => 0,
        }
    }

    /// Padding with and without packing (text).
    pub fn padding(&self) -> Option<PaddingReport> {
        match self {
            Data::Images(_) => None,
            Data::Text(d) => Some(d.padding),
        }
    }
}

/// The result of a run, also written to `summary.json` in the run folder.
#[derive(Clone, Debug, serde::Serialize)]
pub struct RunSummary {
    /// The recipe file.
    pub recipe_file: PathBuf,
    /// The run folder (empty on data-parallel ranks other than 0, which write nothing).
    pub run_dir: PathBuf,
    /// The stack that ran, e.g. `mode acc on cpu (Autodiff<Acc<Flex>>)`.
    pub stack: String,
    /// Training samples available per epoch.
    pub train_samples: usize,
    /// Held-out samples available.
    pub eval_samples: usize,
    /// Images skipped as undecodable (`data.on_corrupt = "skip"`).
    pub skipped_images: u64,
    /// Text: fraction of padding tokens with and without packing.
    pub padding: Option<PaddingReport>,
    /// What the run measured.
    pub outcome: TrainOutcome,
    /// `[kernels]` keys switched on whose kernels never ran.
    pub unused_kernels: Vec<UnusedKernel>,
}

impl RunSummary {
    /// What a run of the recipe at `file` on `stack` with `data` produced.
    fn new(
        recipe: &Recipe,
        file: &Path,
        run_dir: PathBuf,
        stack: Stack,
        data: &Data,
        outcome: TrainOutcome,
    ) -> Self {
        Self {
            recipe_file: file.to_owned(),
            run_dir,
            stack: stack.to_string(),
            train_samples: data.train_samples(),
            eval_samples: data.eval_samples(),
            skipped_images: data.skipped(),
            padding: data.padding(),
            outcome,
            unused_kernels: unused_kernels(&recipe.kernels),
        }
    }
}

/// Checks the recipe at `file`, then trains it. Every recipe or device error is returned before
/// any data is read or any file is written.
pub fn run_recipe(file: &Path, options: &RunOptions) -> Result<RunSummary> {
    let recipe = load_recipe(file, &options.sets)?;
    // Before any device starts: CubeCL reads its configuration once.
    let caches = configure_kernel_caches();
    let devices = &recipe.ddp.devices;
    if !devices.is_empty() && options.process.is_some() {
        anyhow::bail!(
            "key `ddp.devices` in {}: under launch every process trains on one device (its \
             LOCAL_RANK); remove ddp.devices or run train without launch",
            file.display()
        );
    }
    let stacks = if devices.is_empty() {
        let stack = resolve_stack(recipe.backend.mode, recipe.backend.device)?;
        match &options.process {
            Some(group) => vec![process_stack(stack, group)?],
            None => vec![stack],
        }
    } else {
        resolve_devices(recipe.backend.mode, devices)?
    };
    let stack = stacks[0];
    check_amp_dtype(&recipe, file, stack)?;
    if !options.is_leader() {
        return run_checked(&recipe, file, stack, options);
    }
    eprintln!(
        "backend: {stack} (recipe asked for device `{}`)",
        recipe.backend.device
    );
    if stacks.len() > 1 {
        let names: Vec<String> = stacks.iter().map(|s| s.device().to_string()).collect();
        eprintln!(
            "ddp: {} devices in this process, one thread each ({}); gradients all-reduced in \
             buckets of {} bytes",
            stacks.len(),
            names.join(", "),
            recipe.ddp.bucket.bytes().expect("checked with the recipe")
        );
    }
    if let Some(group) = &options.process {
        eprintln!(
            "ddp: {} processes, meeting at {}:{}; gradients all-reduced in buckets of {} bytes",
            group.world,
            group.master_addr,
            group.master_port,
            recipe.ddp.bucket.bytes().expect("checked with the recipe")
        );
    }
    if stack.device() != crate::recipe::DeviceSpec::Cpu {
        eprintln!("kernels: {caches}");
    }
    if let Some(dtype) = recipe.amp.autocast_dtype() {
        let scaler = if recipe.amp.loss_scaling() {
            "on"
        } else {
            "off"
        };
        eprintln!("amp: autocast in {}, loss scaling {scaler}", dtype.as_str());
    }
    if devices.is_empty() {
        run_checked(&recipe, file, stack, options)
    } else {
        run_local_devices(&recipe, file, &stacks, options)
    }
}

/// Trains an already checked recipe on `stack`. Runs in one process take turns (they share the
/// backends' random generators). In a data-parallel run of several processes
/// (`options.process`), each trains on its share of the data, and only rank 0 prints, logs,
/// evaluates and writes the run folder.
pub fn run_checked(
    recipe: &Recipe,
    file: &Path,
    stack: Stack,
    options: &RunOptions,
) -> Result<RunSummary> {
    let _turn = RUNS.lock().unwrap_or_else(|e| e.into_inner());
    // Checked before any work; the routes hold on this thread, where the stack runs, until
    // the run ends.
    let _routes = route_kernels(stack, &recipe.kernels)?;
    let resume = open_resume(recipe, file, options)?;
    let data = Data::build(recipe)?;
    let peering = options.process.as_ref().map(Peering::Process);
    run_replica(
        recipe,
        file,
        stack,
        options,
        peering,
        &data,
        resume.as_ref(),
    )
}

/// Trains an already checked recipe data-parallel on `stacks` (`[ddp] devices`), one thread
/// per device, as [`run_checked`] trains on one; returns rank 0's summary, or the first error
/// (rank 0's if it failed).
pub fn run_local_devices(
    recipe: &Recipe,
    file: &Path,
    stacks: &[Stack],
    options: &RunOptions,
) -> Result<RunSummary> {
    let _turn = RUNS.lock().unwrap_or_else(|e| e.into_inner());
    // Checked before any work (each thread routes for itself below); the data is read once
    // and shared by the replicas.
    drop(route_kernels(stacks[0], &recipe.kernels)?);
    let resume = open_resume(recipe, file, options)?;
    let resume = resume.as_ref();
    let data = Data::build(recipe)?;
    let world = stacks.len();
    let results: Vec<Result<RunSummary>> = std::thread::scope(|scope| {
        let handles: Vec<_> = stacks
            .iter()
            .enumerate()
            .map(|(rank, &stack)| {
                let peering = Some(Peering::Thread { rank, world });
                let data = &data;
                scope.spawn(move || {
                    let _routes = route_kernels(stack, &recipe.kernels)?;
                    run_replica(recipe, file, stack, options, peering, data, resume)
                })
            })
            .collect();
        handles
            .into_iter()
            .enumerate()
            .map(|(rank, handle)| {
                handle.join().unwrap_or_else(|_| {
                    Err(anyhow::anyhow!("ddp: the thread of rank {rank} panicked"))
                })
            })
            .collect()
    });
    let mut results = results.into_iter();
    let leader = results.next().expect("at least one device");
    match leader {
        Ok(summary) => match results.find_map(Result::err) {
            Some(error) => Err(error),
            None => Ok(summary),
        },
        Err(error) => Err(error),
    }
}

/// One replica's run on `data`: the whole run without `peering`; with it, this replica's
/// share, rank 0 alone writing. The caller holds [`RUNS`] and this thread's kernel routes.
fn run_replica(
    recipe: &Recipe,
    file: &Path,
    stack: Stack,
    options: &RunOptions,
    peering: Option<Peering<'_>>,
    data: &Data,
    resume: Option<&Resume>,
) -> Result<RunSummary> {
    let sharded;
    let data = match peering {
        Some(p) => {
            sharded = data.sharded(p.shard());
            &sharded
        }
        None => data,
    };
    let leader = peering.is_none_or(|p| p.rank() == 0);
    if !leader {
        let task = TrainTask {
            recipe,
            data,
            run_dir: None,
            quiet: true,
            profile: None,
            peering,
            resume,
        };
        let outcome = with_stack(stack, task)?;
        return Ok(RunSummary::new(
            recipe,
            file,
            PathBuf::new(),
            stack,
            data,
            outcome,
        ));
    }
    let run_dir = leader_run_dir(recipe, file, resume)?;
    report_data(recipe, data, &run_dir);
    // A resumed run rewrites it once the checkpoint has loaded (nothing changes before).
    if resume.is_none() {
        write_atomic(&run_dir.join("recipe.toml"), recipe_toml(recipe).as_bytes())?;
    }

    let task = TrainTask {
        recipe,
        data,
        run_dir: Some(&run_dir),
        quiet: options.quiet,
        profile: options.profile.clone(),
        peering,
        resume,
    };
    let outcome = match with_stack(stack, task) {
        Ok(outcome) => outcome,
        Err(error) if resume.is_none() && !any_step_logged(&run_dir) => {
            // Refused before training (e.g. no `auto` checkpoint plan fits the first batch):
            // the fresh folder holds nothing of value and is removed.
            std::fs::remove_dir_all(&run_dir).ok();
            return Err(error);
        }
        Err(error) => return Err(error),
    };
    finish_run(recipe, file, stack, data, outcome, run_dir)
}

/// The run folder of rank 0: the resumed run's, or a fresh one under `train.run_dir`.
fn leader_run_dir(recipe: &Recipe, file: &Path, resume: Option<&Resume>) -> Result<PathBuf> {
    Ok(match resume {
        Some(resume) => {
            eprintln!(
                "resume: from {} (step {} of {})",
                resume.dir.display(),
                resume.manifest.step,
                recipe.train.max_steps
            );
            resume.run_dir.clone()
        }
        None => {
            let root = recipe
                .train
                .run_dir
                .clone()
                .unwrap_or_else(|| default_run_root(file));
            fresh_run_dir(&root)?
        }
    })
}

/// Says what the run trains on (and, for text, how much padding packing saved).
fn report_data(recipe: &Recipe, data: &Data, run_dir: &Path) {
    eprintln!(
        "data: {} training / {} held-out samples, {} classes; run folder {}",
        data.train_samples(),
        data.eval_samples(),
        data.num_classes(),
        run_dir.display()
    );
    if let Data::Text(text) = data {
        let p = text.padding;
        eprintln!(
            "data: padding {:.1}% of tokens one sample per row, {:.1}% packed into rows of {} \
             (packing {}); {} sample(s) truncated to {} tokens",
            100.0 * p.padded,
            100.0 * p.packed,
            recipe.data.max_length,
            if p.packing { "on" } else { "off" },
            text.truncated,
            recipe.data.max_length
        );
    }
}

/// Rank 0 after training: reports, `summary.json`, the curves.
fn finish_run(
    recipe: &Recipe,
    file: &Path,
    stack: Stack,
    data: &Data,
    outcome: TrainOutcome,
    run_dir: PathBuf,
) -> Result<RunSummary> {
    if let Some(eval) = &outcome.eval {
        println!(
            "held-out accuracy: {:.2}% ({} / {})",
            100.0 * eval.accuracy(),
            eval.correct,
            eval.samples
        );
    }
    let summary = RunSummary::new(recipe, file, run_dir.clone(), stack, data, outcome);
    for unused in &summary.unused_kernels {
        eprintln!("kernels: {unused}");
    }
    if data.skipped() > 0 {
        eprintln!(
            "data: skipped {} undecodable image(s) (data.on_corrupt = \"skip\")",
            data.skipped()
        );
    }
    let json = serde_json::to_vec_pretty(&summary)?;
    write_atomic(&run_dir.join("summary.json"), &json)?;
    // The run is complete and saved; a chart that cannot be drawn is reported, not fatal.
    match crate::curves::write_curves(&run_dir) {
        Ok(path) => eprintln!("curves: {}", path.display()),
        Err(e) => eprintln!("curves: not drawn: {e:#}"),
    }
    Ok(summary)
}

/// The checkpoint `options.resume` names, read and checked against `recipe` (from `file`).
fn open_resume(recipe: &Recipe, file: &Path, options: &RunOptions) -> Result<Option<Resume>> {
    let Some(path) = &options.resume else {
        return Ok(None);
    };
    let resume = Resume::open(path)?;
    resume.check_recipe(recipe, file)?;
    Ok(Some(resume))
}

/// Whether `run_dir`'s log holds a step.
fn any_step_logged(run_dir: &Path) -> bool {
    std::fs::metadata(run_dir.join("log.jsonl")).is_ok_and(|m| m.len() > 0)
}

/// `runs/<recipe file stem>`.
fn default_run_root(file: &Path) -> PathBuf {
    let stem = file
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "run".into());
    PathBuf::from("runs").join(stem)
}
