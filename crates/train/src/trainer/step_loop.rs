//! The training loop, generic over the backend stack and the optimizer.

use super::auto_checkpoint::{AutoCheckpointSummary, measure_blocks, plan_auto};
use super::batch::{Upload, correct_count};
use super::classify::ClassifyCheckpointed;
use super::eval::EvalResult;
use super::prefetch::{DeviceBatches, Epochs};
use super::source::BatchSource;
use super::step::{GradientSync, StepOutput, Stepper};
use crate::log::{JsonlLog, StepRecord};
use crate::memory::read_memory;
use crate::profile::Profiler;
use crate::progress::Progress;
use crate::recipe::learning_rate;
use crate::recipe::{CheckpointMode, OnNonFinite, Recipe};
use crate::resume::{CheckpointWriter, LoopStart, read_skipped};
use crate::stack::Stack;
use anyhow::Result;
use burn::module::AutodiffModule;
use burn::optim::GradientsParams;
use burn::tensor::Int;
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::{Tensor, Transaction};
use burnacc_backend::counters;
use burnacc_backend::trace;
use burnacc_checkpoint::CheckpointBackend;
use burnacc_checkpoint::CheckpointTape;
use burnacc_ddp::Peer;
use std::time::{Duration, Instant};

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
/// With `peer` (a data-parallel run), every step's gradients are averaged with the other
/// processes' between backward and the optimizer step, and the logged loss, accuracy and
/// samples/s are over all processes' batches (one small all-reduce per logged step).
///
/// The loop starts at `persist.start` (a resumed run: its step, epoch and position in the
/// epoch) and writes a checkpoint through `persist.writer` after each step it is due.
///
/// Batches are uploaded `data.device_prefetch` steps ahead by a thread of their own
/// ([`DeviceBatches`]); `data_wait_ms` is the time the step still waited for one.
#[allow(clippy::too_many_arguments)]
pub fn train_steps<B, M, H, S>(
    mut model: M,
    mut stepper: Stepper<B, M>,
    recipe: &Recipe,
    loader: S,
    stack: Stack,
    device: &B::Device,
    log: &mut JsonlLog,
    progress: &Progress,
    mut profiler: Option<&mut Profiler>,
    peer: Option<&Peer<B::InnerBackend>>,
    persist: Persist<'_, M>,
) -> Result<(M, LoopStats)>
where
    B: CheckpointBackend,
    M: ClassifyCheckpointed<B, H> + AutodiffModule<B>,
    H: Upload<B>,
    S: BatchSource<H> + Send + 'static,
{
    let total = recipe.train.max_steps;
    let start = persist.start;
    // Steps skipped on the device so far (loss scaling, or `on_nonfinite = "skip"`): f32 [1].
    let mut skipped = (stepper.scaler().is_enabled()
        || recipe.train.on_nonfinite == OnNonFinite::Skip)
        .then(|| {
            let so_far = start.skipped_steps.unwrap_or(0) as f32;
            Tensor::<B::InnerBackend, 1>::from_floats([so_far], device)
        });
    // `on_nonfinite = "skip"`: the current and the longest run of consecutive steps with a
    // non-finite loss since the last logged step, f32 [1] on the device.
    let mut nonfinite_runs = (recipe.train.on_nonfinite == OnNonFinite::Skip).then(|| {
        let zero = Tensor::<B::InnerBackend, 1>::zeros([1], device);
        (zero.clone(), zero)
    });
    let count_reads = stack.mode() == crate::recipe::Mode::Acc;
    let mut reads_baseline = counters::snapshot();
    let mut stats = LoopStats::default();
    let mut speeds = Vec::new();
    let mut wait_fractions = Vec::new();
    let mut epoch = start.epoch;
    // Batches of `epoch` trained on (the data position a checkpoint records).
    let mut batches_in_epoch = start.batches_in_epoch;
    let mut batches = DeviceBatches::<B, H, S>::new(
        Epochs::new(loader, epoch, batches_in_epoch),
        device,
        recipe.data.device_prefetch,
    );
    let started = Instant::now();
    let mut interval_start = Instant::now();
    let mut interval_samples = 0usize;
    let mut interval_steps = 0usize;
    // Time spent in the loader's `next` since the last logged step.
    let mut interval_wait = Duration::ZERO;
    // `auto`: which blocks to checkpoint, planned from the first batch.
    let mut auto_plan: Option<Vec<bool>> = None;

    for step in start.step..total {
        // `train.accumulate` micro-batches per optimizer step.
        let mut micro_batches = Vec::with_capacity(recipe.train.accumulate);
        let mut batch_size = 0;
        let waiting = Instant::now();
        for _ in 0..recipe.train.accumulate {
            let placed = batches.next_batch()?;
            (epoch, batches_in_epoch) = (placed.epoch, placed.batches_in_epoch);
            batch_size += placed.samples;
            micro_batches.push(placed.batch);
        }
        interval_wait += waiting.elapsed();
        let lr = learning_rate(&recipe.optim, step, total);
        let mode = recipe.checkpoint.mode;
        if mode == CheckpointMode::Auto && auto_plan.is_none() {
            let budget = recipe.checkpoint.budget_bytes().expect("auto has a budget");
            let first = &micro_batches[0];
            let costs =
                measure_blocks::<B, M>(&model, stack, device, stepper.autocast(), |m, probe| {
                    m.classify_probed(first.clone(), probe)
                });
            let (plan, summary) = plan_auto(&costs, budget)?;
            eprintln!("checkpoint: auto: {summary}");
            stats.auto_checkpoint = Some(summary);
            auto_plan = Some(plan.checkpointed);
        }
        // Every mode runs the blocks through the step's tape, which seeds each block's random
        // draws by its position: dropout and stochastic depth draw the same values whichever
        // blocks are checkpointed.
        let plan = auto_plan.as_deref();
        let forwards: Vec<_> = micro_batches
            .into_iter()
            .map(|batch| {
                move |model: &M, tape: &mut CheckpointTape<B>| match mode {
                    CheckpointMode::None => model.classify_checkpointed(batch, tape, &|_| false),
                    CheckpointMode::Blocks => model.classify_checkpointed(batch, tape, &|_| true),
                    CheckpointMode::Auto => {
                        let plan = plan.expect("planned above");
                        model.classify_checkpointed(batch, tape, &|i| plan[i])
                    }
                }
            })
            .collect();
        let mut sync = |model: &M, grads: GradientsParams| -> Result<GradientsParams> {
            Ok(match peer {
                Some(peer) => peer.all_reduce_gradients::<B, M>(model, grads)?,
                None => grads,
            })
        };
        let (next, out) = match profiler.as_deref_mut().filter(|p| p.covers(step)) {
            Some(p) => profiled_step(
                &mut stepper,
                model,
                lr,
                forwards,
                &mut sync,
                device,
                p,
                step,
                batch_size,
            )?,
            None => stepper.step_accumulated(model, lr, forwards, &mut |_| Ok(()), &mut sync)?,
        };
        model = next;
        stats.checkpointed_blocks = out.checkpointed_blocks;
        if let (Some(total_skipped), Some(found)) = (skipped.take(), out.found_inf) {
            skipped = Some(total_skipped + found);
        }
        if let (Some((current, longest)), Some(nonfinite)) =
            (nonfinite_runs.take(), out.nonfinite_loss)
        {
            let current = (current + 1.0) * nonfinite;
            // max(longest, current) with adds only.
            let longest = (longest - current.clone()).clamp_min(0.0) + current.clone();
            nonfinite_runs = Some((current, longest));
        }
        interval_samples += batch_size;
        interval_steps += 1;
        progress.step();

        let done = step + 1;
        let last = done == total;
        let evaluates = persist.evaluator.is_some()
            && ((recipe.train.eval_every > 0 && done.is_multiple_of(recipe.train.eval_every))
                || (last && recipe.train.eval));
        let logged = step == 0 || done.is_multiple_of(recipe.train.log_every) || last || evaluates;
        if logged {
            B::sync(device)?;
            let elapsed = interval_start.elapsed().as_secs_f64();
            let host_reads =
                count_reads.then(|| counters::snapshot().since(&reads_baseline).host_reads());
            let correct = correct_count(out.logits, out.labels);
            // Read with the loss and accuracy in one transaction: the loss scale, the skipped
            // steps and the longest run of non-finite losses, those that this run tracks.
            let scale = stepper
                .scaler()
                .is_enabled()
                .then(|| stepper.scaler().scale_tensor());
            let longest_nonfinite = nonfinite_runs.as_ref().map(|(_, longest)| longest.clone());
            let tracked = [scale, skipped.clone(), longest_nonfinite];
            let mut transaction = Transaction::default().register(out.loss).register(correct);
            for tensor in tracked.iter().flatten() {
                transaction = transaction.register(Tensor::<B, 1>::from_inner(tensor.clone()));
            }
            let data = transaction.execute();
            reads_baseline = counters::snapshot();
            let loss = data[0].iter::<f64>().next().unwrap_or(f64::NAN);
            let correct = data[1].iter::<i64>().next().unwrap_or(0) as f64;
            let mut values = data[2..].iter().map(|d| d.iter::<f64>().next());
            let [loss_scale, skipped_steps, longest_nonfinite] =
                tracked.map(|t| t.and_then(|_| values.next().flatten()));
            let skipped_steps = skipped_steps.map(|s| s as u64);
            // Over every process's batch: each loss is a mean over an equal share.
            let (loss, correct, samples) = match peer {
                Some(peer) => over_all_processes(peer, loss, correct, batch_size, device)?,
                None => (loss, correct, batch_size as f64),
            };
            let memory = read_memory(stack);
            let (samples_per_sec, step_secs) = if step == 0 {
                stats.first_step_secs = started.elapsed().as_secs_f64();
                stats.first_loss = loss;
                (None, Some(stats.first_step_secs))
            } else {
                let processes = peer.map_or(1, Peer::world);
                let speed = (interval_samples * processes) as f64 / elapsed;
                speeds.push(speed);
                wait_fractions.push(interval_wait.as_secs_f64() / elapsed);
                (Some(speed), Some(elapsed / interval_steps as f64))
            };
            let data_wait_ms = Some(interval_wait.as_secs_f64() * 1e3 / interval_steps as f64);
            let mut record = StepRecord {
                step: step + 1,
                epoch,
                loss,
                train_accuracy: correct / samples,
                lr,
                samples_per_sec,
                step_secs,
                data_wait_ms,
                memory,
                loss_scale,
                skipped_steps,
                host_reads,
                val_loss: None,
                val_accuracy: None,
                val_top5_accuracy: None,
            };
            if let Some(evaluate) = persist.evaluator.filter(|_| evaluates) {
                // After the step's timing: evaluation is not training throughput.
                let eval = evaluate(&model)?;
                record.val_loss = Some(eval.loss);
                record.val_accuracy = Some(eval.accuracy());
                record.val_top5_accuracy = Some(eval.top5_accuracy());
                if last {
                    stats.final_eval = Some(eval);
                }
            }
            log.write(&record)?;
            progress.logged(&record, total);
            stats.final_loss = loss;
            stats.peak_memory = stats.peak_memory.max(memory.map(|m| m.peak));
            stats.final_loss_scale = loss_scale;
            stats.skipped_steps = skipped_steps;
            check_finite(recipe, step + 1, loss, longest_nonfinite)?;
            // The next interval's longest run starts from the current one.
            if let Some((current, _)) = nonfinite_runs.take() {
                nonfinite_runs = Some((current.clone(), current));
            }
            interval_start = Instant::now();
            interval_samples = 0;
            interval_steps = 0;
            interval_wait = Duration::ZERO;
        }
        stats.steps = step + 1;
        if let Some(writer) = persist.writer.filter(|w| w.due(step + 1, total)) {
            let position = LoopStart {
                step: step + 1,
                epoch,
                batches_in_epoch,
                skipped_steps: skipped.as_ref().map(read_skipped),
            };
            writer.write(&model, &stepper, position)?;
            // The checkpoint's reads are not the steps'.
            reads_baseline = counters::snapshot();
        }
    }
    stats.median_samples_per_sec = median(&mut speeds);
    stats.median_data_wait_fraction = median(&mut wait_fractions);
    Ok((model, stats))
}

/// Stops a diverged run at logged step `step`: with `on_nonfinite = "stop"` when its loss is not
/// finite; with `"skip"` when `longest` consecutive steps since the last logged step reached
/// `train.nonfinite_limit`. The message says what to try.
fn check_finite(recipe: &Recipe, step: usize, loss: f64, longest: Option<f64>) -> Result<()> {
    let advice = format!(
        "lower `optim.lr` (now {}), or under autocast turn on the loss scaler (`[amp] \
         grad_scaler = true`)",
        recipe.optim.lr
    );
    match (recipe.train.on_nonfinite, longest) {
        (OnNonFinite::Stop, _) if !loss.is_finite() => anyhow::bail!(
            "loss is {loss} at step {step}: training diverged; {advice}; `train.on_nonfinite = \
             \"skip\"` skips such steps instead"
        ),
        (OnNonFinite::Skip, Some(longest)) if longest >= recipe.train.nonfinite_limit as f64 => {
            anyhow::bail!(
                "{longest} consecutive steps up to step {step} had a non-finite loss (the last \
                 logged: {loss}; `train.nonfinite_limit` = {}): training diverged; {advice}",
                recipe.train.nonfinite_limit
            )
        }
        _ => Ok(()),
    }
}

/// `(mean loss, correct, samples)` over every process of a data-parallel run, from this
/// process's `loss` (a mean over its `samples`), all processes' batches being equal.
fn over_all_processes<B: burn::tensor::backend::Backend>(
    peer: &Peer<B>,
    loss: f64,
    correct: f64,
    samples: usize,
    device: &B::Device,
) -> Result<(f64, f64, f64)> {
    let local = Tensor::<B, 1>::from_floats([loss as f32, correct as f32, samples as f32], device);
    let sums = peer.all_reduce_sum(local)?.into_data().convert::<f64>();
    let sums: Vec<f64> = sums.to_vec().expect("f64 data");
    Ok((sums[0] / peer.world() as f64, sums[1], sums[2]))
}

/// One step with its phases synchronised and recorded, and the ops `Acc` saw traced; writes
/// the trace after the last profiled step.
#[allow(clippy::too_many_arguments)]
fn profiled_step<B: CheckpointBackend, M: AutodiffModule<B>, F>(
    stepper: &mut Stepper<B, M>,
    model: M,
    lr: f64,
    forwards: Vec<F>,
    sync: GradientSync<'_, M>,
    device: &B::Device,
    profiler: &mut Profiler,
    step: usize,
    samples: usize,
) -> Result<(M, StepOutput<B>)>
where
    F: FnOnce(&M, &mut CheckpointTape<B>) -> (Tensor<B, 2>, Tensor<B, 1, Int>),
{
    B::sync(device)?;
    let start = Instant::now();
    let mut last = start;
    trace::start_tracing();
    let mark = &mut |phase: super::step::Phase| -> Result<()> {
        B::sync(device)?;
        let now = Instant::now();
        profiler.phase(phase.as_str(), last, now, serde_json::Value::Null);
        last = now;
        Ok(())
    };
    let result = stepper.step_accumulated(model, lr, forwards, mark, sync);
    profiler.ops(&trace::stop_tracing());
    let args = serde_json::json!({ "samples": samples });
    profiler.phase(&format!("step {}", step + 1), start, last, args);
    if profiler.is_last(step) {
        profiler.write()?;
        eprintln!(
            "profile: {} (open in https://ui.perfetto.dev or chrome://tracing)",
            profiler.file().display()
        );
    }
    result
}

pub(crate) fn median(values: &mut [f64]) -> Option<f64> {
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
