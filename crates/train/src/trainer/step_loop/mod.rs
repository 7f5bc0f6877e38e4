//! The training loop, generic over the backend stack and the optimizer: the loop itself
//! here; its batches (`batches`), metrics window (`window`), device-side counts (`tallies`),
//! checkpointed blocks (`plan`), step hooks (`hooks`) and logged steps (`logged`) beside it.

mod batches;
mod hooks;
mod logged;
mod plan;
mod tallies;
mod window;

pub use hooks::StepHooks;

use super::auto_checkpoint::AutoCheckpointSummary;
use super::batch::Upload;
use super::classify::ClassifyCheckpointed;
use super::eval::EvalResult;
use super::source::BatchSource;
use super::step::Stepper;
use crate::log::JsonlLog;
use crate::progress::Progress;
use crate::recipe::{Mode, Recipe, learning_rate};
use crate::resume::{CheckpointWriter, LoopStart};
use crate::stack::Stack;
use anyhow::Result;
use batches::StepBatches;
use burn::module::AutodiffModule;
use burn::tensor::backend::AutodiffBackend;
use burnacc_checkpoint::CheckpointBackend;
use logged::LoggedAt;
pub use plan::BlockPlan;
use tallies::DeviceTallies;
use window::MetricsWindow;

/// What the loop measured.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct LoopStats {
    /// Optimizer steps done.
    pub steps: usize,
    /// Loss of the last logged step.
    pub final_loss: f64,
    /// Loss of the first step.
    pub first_loss: f64,
    /// Seconds of the first step (includes kernel compilation and autotuning on CubeCL).
    pub first_step_secs: f64,
    /// Median samples/s over the logged intervals after the first step.
    pub median_samples_per_sec: Option<f64>,
    /// Median, over the logged intervals after the first step, of the fraction of the time
    /// spent waiting for the loader (`data_wait_ms` over `step_secs`).
    pub median_data_wait_fraction: Option<f64>,
    /// Peak memory seen at the logged steps.
    pub peak_memory: Option<u64>,
    /// Loss scale after the last step (loss scaling on).
    pub final_loss_scale: Option<f64>,
    /// Steps skipped on the device: inf/NaN gradients under loss scaling, non-finite losses
    /// with `on_nonfinite = "skip"`.
    pub skipped_steps: Option<u64>,
    /// Blocks checkpointed per step (`[checkpoint] mode`).
    pub checkpointed_blocks: usize,
    /// What `[checkpoint] mode = "auto"` measured and chose.
    pub auto_checkpoint: Option<AutoCheckpointSummary>,
    /// The evaluation after the last step (`train.eval`), also in the run's outcome.
    #[serde(skip)]
    pub final_eval: Option<EvalResult>,
}

/// Evaluates a model on the held-out split (rank 0 of a run that evaluates).
pub type Evaluator<'a, M> = &'a dyn Fn(&M) -> Result<EvalResult>;

/// Where the loop starts, what it writes to survive a stop, and how it evaluates.
pub struct Persist<'a, M> {
    /// Step 0 of epoch 0, or a checkpoint's position (`--resume`).
    pub start: LoopStart,
    /// Writes checkpoints as the recipe says (rank 0 of a run with a run folder).
    pub writer: Option<&'a CheckpointWriter>,
    /// Evaluates every `train.eval_every` steps and, with `train.eval`, after the last.
    pub evaluator: Option<Evaluator<'a, M>>,
}

/// The run around the loop: what it trains by, on which stack and device, where its records
/// go, and the hooks around each step.
pub struct LoopRun<'a, B: CheckpointBackend> {
    /// The checked recipe.
    pub recipe: &'a Recipe,
    /// The backend stack (memory readings; host reads are counted on `acc` stacks).
    pub stack: Stack,
    /// The device.
    pub device: &'a B::Device,
    /// `log.jsonl`.
    pub log: &'a mut JsonlLog,
    /// The progress bar.
    pub progress: &'a Progress,
    /// Profiler and data parallelism.
    pub hooks: StepHooks<'a, B>,
}

/// What the loop keeps from step to step besides the model.
struct LoopState<B: CheckpointBackend> {
    stats: LoopStats,
    tallies: DeviceTallies<B>,
    window: MetricsWindow,
}

impl<B: CheckpointBackend> LoopState<B> {
    /// Writes the checkpoint after step `done` of `(done, epoch, batches_in_epoch)`.
    fn write_checkpoint<M: AutodiffModule<B>>(
        &mut self,
        writer: &CheckpointWriter,
        model: &M,
        stepper: &Stepper<B, M>,
        (done, epoch, batches_in_epoch): (usize, u64, usize),
    ) -> Result<()> {
        let position = LoopStart {
            step: done,
            epoch,
            batches_in_epoch,
            skipped_steps: self.tallies.skipped_so_far(),
        };
        writer.write(model, stepper, position)?;
        // The checkpoint's reads are not the steps'.
        self.window.skip_reads();
        Ok(())
    }
}

/// Trains `model` on batches `H` of `loader` for `recipe.train.max_steps` steps, logging every
/// `log_every` steps.
///
/// With `[amp]` on, the forward pass and the loss run under autocast, the loss is scaled
/// before backward, and the optimizer skips steps with inf/NaN gradients on the device.
///
/// Nothing is read back from the device between logged steps (the first, every
/// `log_every`-th and the last): the loss, accuracy, loss scale and skipped-step count are
/// device tensors read in one transaction at a logged step, after synchronising the device, so
/// throughput covers whole steps. On `acc` stacks each record says how many host reads went
/// through `Acc` between logged steps outside that transaction (zero when the step is
/// sync-free).
///
/// With a peer (`run.hooks.peer`, a data-parallel run), every step's gradients are averaged
/// with the other processes' between backward and the optimizer step, and the logged loss,
/// accuracy and samples/s are over all processes' batches (one small all-reduce per logged
/// step).
///
/// The loop starts at `persist.start` (a resumed run: its step, epoch and position in the
/// epoch) and writes a checkpoint through `persist.writer` after each step it is due.
///
/// Batches are uploaded `data.device_prefetch` steps ahead by a thread of their own
/// (`DeviceBatches`); `data_wait_ms` is the time the step still waited for one.
pub fn train_steps<B, M, H, S>(
    mut model: M,
    mut stepper: Stepper<B, M>,
    loader: S,
    mut run: LoopRun<'_, B>,
    persist: Persist<'_, M>,
) -> Result<(M, LoopStats)>
where
    B: CheckpointBackend,
    M: ClassifyCheckpointed<B, H> + AutodiffModule<B>,
    H: Upload<B>,
    S: BatchSource<H> + Send + 'static,
{
    let (recipe, device) = (run.recipe, run.device);
    let total = recipe.train.max_steps;
    let start = persist.start;
    let mut state = LoopState {
        stats: LoopStats::default(),
        tallies: DeviceTallies::new(recipe, &stepper, &start, device),
        window: MetricsWindow::new(run.stack.mode() == Mode::Acc),
    };
    let mut batches = StepBatches::<B, H, S>::new(loader, &start, recipe, device);
    let mut plan = BlockPlan::new(recipe);
    for step in start.step..total {
        let batch = batches.next_step()?;
        let autocast = stepper.autocast();
        if let Some(summary) =
            plan.plan_once::<B, M, H>(&model, run.stack, device, autocast, &batch.micro[0])?
        {
            state.stats.auto_checkpoint = Some(summary);
        }
        let lr = learning_rate(&recipe.optim, step, total);
        let forwards = plan.forwards::<B, M, H>(batch.micro);
        let (next, out) = run.hooks.step(
            &mut stepper,
            model,
            lr,
            forwards,
            device,
            step,
            batch.samples,
        )?;
        model = next;
        state.stats.checkpointed_blocks = out.checkpointed_blocks;
        state.tallies.add(&out);
        state.window.add_step(batch.samples, batch.waited);
        run.progress.step();

        let done = step + 1;
        let last = done == total;
        let train = &recipe.train;
        let evaluator = persist.evaluator.filter(|_| {
            (train.eval_every > 0 && done.is_multiple_of(train.eval_every)) || (last && train.eval)
        });
        if step == 0 || done.is_multiple_of(train.log_every) || last || evaluator.is_some() {
            let at = LoggedAt {
                step,
                epoch: batch.epoch,
                lr,
                samples: batch.samples,
                last,
            };
            state.log(&mut run, &stepper, &model, out, at, evaluator)?;
        }
        state.stats.steps = done;
        if let Some(writer) = persist.writer.filter(|w| w.due(done, total)) {
            let position = (done, batch.epoch, batch.batches_in_epoch);
            state.write_checkpoint(writer, &model, &stepper, position)?;
        }
    }
    let LoopState {
        mut stats, window, ..
    } = state;
    window.finish(&mut stats);
    Ok((model, stats))
}

/// The median of `values` (sorted in place; the mean of the middle two for an even count),
/// `None` for none.
pub fn median(values: &mut [f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    Some(if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    })
}

/// The model on the inner backend, no autodiff: batch norm uses running statistics and dropout
/// is off.
pub fn inference_model<B: AutodiffBackend, M: AutodiffModule<B>>(model: &M) -> M::InnerModule {
    model.valid()
}
