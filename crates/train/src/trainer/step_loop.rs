//! The training loop, generic over the backend stack and the optimizer.

use super::auto_checkpoint::{AutoCheckpointSummary, measure_blocks, plan_auto};
use super::batch::correct_count;
use super::classify::ClassifyCheckpointed;
use super::source::BatchSource;
use super::step::{GradientSync, StepOutput, Stepper};
use crate::log::{JsonlLog, StepRecord};
use crate::memory::read_memory;
use crate::profile::Profiler;
use crate::progress::Progress;
use crate::recipe::learning_rate;
use crate::recipe::{CheckpointMode, Recipe};
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
use std::time::Instant;

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
    /// Peak memory seen at the logged steps.
    pub peak_memory: Option<u64>,
    /// Loss scale after the last step (loss scaling on).
    pub final_loss_scale: Option<f64>,
    /// Steps the loss scaler skipped for inf/NaN gradients (loss scaling on).
    pub skipped_steps: Option<u64>,
    /// Blocks checkpointed per step (`[checkpoint] mode`).
    pub checkpointed_blocks: usize,
    /// What `[checkpoint] mode = "auto"` measured and chose.
    pub auto_checkpoint: Option<AutoCheckpointSummary>,
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
#[allow(clippy::too_many_arguments)]
pub fn train_steps<B, M, H, S>(
    mut model: M,
    mut stepper: Stepper<B, M>,
    recipe: &Recipe,
    loader: &S,
    stack: Stack,
    device: &B::Device,
    log: &mut JsonlLog,
    progress: &Progress,
    mut profiler: Option<&mut Profiler>,
    peer: Option<&Peer<B::InnerBackend>>,
) -> Result<(M, LoopStats)>
where
    B: CheckpointBackend,
    M: ClassifyCheckpointed<B, H> + AutodiffModule<B>,
    H: Clone,
    S: BatchSource<H>,
{
    let total = recipe.train.max_steps;
    // Steps skipped by the loss scaler so far: f32 [1] on the device.
    let mut skipped = stepper
        .scaler()
        .is_enabled()
        .then(|| Tensor::<B::InnerBackend, 1>::zeros([1], device));
    let count_reads = stack.mode() == crate::recipe::Mode::Acc;
    let mut reads_baseline = counters::snapshot();
    let mut stats = LoopStats::default();
    let mut speeds = Vec::new();
    let mut epoch = 0u64;
    let mut batches = loader.batches(epoch);
    let started = Instant::now();
    let mut interval_start = Instant::now();
    let mut interval_samples = 0usize;
    let mut interval_steps = 0usize;
    // `auto`: which blocks to checkpoint, planned from the first batch.
    let mut auto_plan: Option<Vec<bool>> = None;

    for step in 0..total {
        let batch = match batches.next() {
            Some(batch) => batch?,
            None => {
                epoch += 1;
                batches = loader.batches(epoch);
                batches
                    .next()
                    .ok_or_else(|| anyhow::anyhow!("the training split has no batch"))??
            }
        };
        let batch_size = S::samples(&batch);
        let lr = learning_rate(&recipe.optim, step, total);
        let mode = recipe.checkpoint.mode;
        if mode == CheckpointMode::Auto && auto_plan.is_none() {
            let budget = recipe.checkpoint.budget_bytes().expect("auto has a budget");
            let costs =
                measure_blocks::<B, M>(&model, stack, device, stepper.autocast(), |m, probe| {
                    m.classify_probed(batch.clone(), device, probe)
                });
            let (plan, summary) = plan_auto(&costs, budget)?;
            eprintln!("checkpoint: auto: {summary}");
            stats.auto_checkpoint = Some(summary);
            auto_plan = Some(plan.checkpointed);
        }
        // Every mode runs the blocks through the step's tape, which seeds each block's random
        // draws by its position: dropout and stochastic depth draw the same values whichever
        // blocks are checkpointed.
        let forward = |model: &M, tape: &mut CheckpointTape<B>| match mode {
            CheckpointMode::None => model.classify_checkpointed(batch, device, tape, &|_| false),
            CheckpointMode::Blocks => model.classify_checkpointed(batch, device, tape, &|_| true),
            CheckpointMode::Auto => {
                let plan = auto_plan.as_deref().expect("planned above");
                model.classify_checkpointed(batch, device, tape, &|i| plan[i])
            }
        };
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
                forward,
                &mut sync,
                device,
                p,
                step,
                batch_size,
            )?,
            None => stepper.step_synced(model, lr, forward, &mut |_| Ok(()), &mut sync)?,
        };
        model = next;
        stats.checkpointed_blocks = out.checkpointed_blocks;
        if let (Some(total_skipped), Some(found)) = (skipped.take(), out.found_inf) {
            skipped = Some(total_skipped + found);
        }
        interval_samples += batch_size;
        interval_steps += 1;
        progress.step();

        let logged = step == 0 || (step + 1) % recipe.train.log_every == 0 || step + 1 == total;
        if logged {
            B::sync(device)?;
            let elapsed = interval_start.elapsed().as_secs_f64();
            let host_reads =
                count_reads.then(|| counters::snapshot().since(&reads_baseline).host_reads());
            let correct = correct_count(out.logits, out.labels);
            let mut transaction = Transaction::default().register(out.loss).register(correct);
            if let Some(total_skipped) = &skipped {
                transaction = transaction
                    .register(Tensor::<B, 1>::from_inner(stepper.scaler().scale_tensor()))
                    .register(Tensor::<B, 1>::from_inner(total_skipped.clone()));
            }
            let data = transaction.execute();
            reads_baseline = counters::snapshot();
            let loss = data[0].iter::<f64>().next().unwrap_or(f64::NAN);
            let correct = data[1].iter::<i64>().next().unwrap_or(0) as f64;
            // Over every process's batch: each loss is a mean over an equal share.
            let (loss, correct, samples) = match peer {
                Some(peer) => over_all_processes(peer, loss, correct, batch_size, device)?,
                None => (loss, correct, batch_size as f64),
            };
            let loss_scale = data.get(2).and_then(|d| d.iter::<f64>().next());
            let skipped_steps = data
                .get(3)
                .and_then(|d| d.iter::<f64>().next())
                .map(|s| s as u64);
            let memory = read_memory(stack);
            let (samples_per_sec, step_secs) = if step == 0 {
                stats.first_step_secs = started.elapsed().as_secs_f64();
                stats.first_loss = loss;
                (None, Some(stats.first_step_secs))
            } else {
                let processes = peer.map_or(1, Peer::world);
                let speed = (interval_samples * processes) as f64 / elapsed;
                speeds.push(speed);
                (Some(speed), Some(elapsed / interval_steps as f64))
            };
            let record = StepRecord {
                step: step + 1,
                epoch,
                loss,
                train_accuracy: correct / samples,
                lr,
                samples_per_sec,
                step_secs,
                memory,
                loss_scale,
                skipped_steps,
                host_reads,
            };
            log.write(&record)?;
            progress.logged(&record, total);
            stats.final_loss = loss;
            stats.peak_memory = stats.peak_memory.max(memory.map(|m| m.peak));
            stats.final_loss_scale = loss_scale;
            stats.skipped_steps = skipped_steps;
            if !loss.is_finite() {
                anyhow::bail!(
                    "loss is {loss} at step {}: training diverged (lower optim.lr?)",
                    step + 1
                );
            }
            interval_start = Instant::now();
            interval_samples = 0;
            interval_steps = 0;
        }
        stats.steps = step + 1;
    }
    stats.median_samples_per_sec = median(&mut speeds);
    Ok((model, stats))
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
fn profiled_step<B: CheckpointBackend, M: AutodiffModule<B>>(
    stepper: &mut Stepper<B, M>,
    model: M,
    lr: f64,
    forward: impl FnOnce(&M, &mut CheckpointTape<B>) -> (Tensor<B, 2>, Tensor<B, 1, Int>),
    sync: GradientSync<'_, M>,
    device: &B::Device,
    profiler: &mut Profiler,
    step: usize,
    samples: usize,
) -> Result<(M, StepOutput<B>)> {
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
    let result = stepper.step_synced(model, lr, forward, mark, sync);
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
