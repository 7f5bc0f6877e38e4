//! A logged step: the device synchronised, the step's values read in one transaction, the
//! record written, the held-out evaluation when due, divergence stopped.

use super::super::batch::correct_count;
use super::super::step::{StepOutput, Stepper};
use super::{Evaluator, LoopRun, LoopState};
use crate::log::StepRecord;
use crate::memory::read_memory;
use crate::recipe::{OnNonFinite, Recipe};
use anyhow::Result;
use burn::module::AutodiffModule;
use burn::tensor::backend::Backend;
use burn::tensor::{Tensor, Transaction};
use burnacc_checkpoint::CheckpointBackend;
use burnacc_ddp::Peer;

/// Where a logged step is.
pub(super) struct LoggedAt {
    /// The step index (0-based).
    pub step: usize,
    /// Its epoch.
    pub epoch: u64,
    /// Its learning rate.
    pub lr: f64,
    /// Samples of this process's step.
    pub samples: usize,
    /// The run's last step.
    pub last: bool,
}

/// The values of a step read back from the device.
struct ReadBack {
    loss: f64,
    correct: f64,
    loss_scale: Option<f64>,
    skipped_steps: Option<u64>,
    longest_nonfinite: Option<f64>,
}

impl<B: CheckpointBackend> LoopState<B> {
    /// Logs step `at` from its output `out`; evaluates `model` with `evaluator`, if given.
    pub(super) fn log<M: AutodiffModule<B>>(
        &mut self,
        run: &mut LoopRun<'_, B>,
        stepper: &Stepper<B, M>,
        model: &M,
        out: StepOutput<B>,
        at: LoggedAt,
        evaluator: Option<Evaluator<'_, M>>,
    ) -> Result<()> {
        B::sync(run.device)?;
        let elapsed = self.window.elapsed_secs();
        let host_reads = self.window.host_reads();
        let read = self.read_back(stepper, out);
        self.window.skip_reads();
        // Over every process's batch: each loss is a mean over an equal share.
        let peer = run.hooks.peer;
        let (loss, correct, samples) = match peer {
            Some(peer) => {
                over_all_processes(peer, read.loss, read.correct, at.samples, run.device)?
            }
            None => (read.loss, read.correct, at.samples as f64),
        };
        let memory = read_memory(run.stack);
        let processes = peer.map_or(1, Peer::world);
        let rates = self
            .window
            .close(elapsed, at.step == 0, processes, &mut self.stats);
        if at.step == 0 {
            self.stats.first_loss = loss;
        }
        let mut record = StepRecord {
            step: at.step + 1,
            epoch: at.epoch,
            loss,
            train_accuracy: correct / samples,
            lr: at.lr,
            samples_per_sec: rates.samples_per_sec,
            step_secs: rates.step_secs,
            data_wait_ms: rates.data_wait_ms,
            memory,
            loss_scale: read.loss_scale,
            skipped_steps: read.skipped_steps,
            host_reads,
            val_loss: None,
            val_accuracy: None,
            val_top5_accuracy: None,
        };
        if let Some(evaluate) = evaluator {
            // After the step's timing: evaluation is not training throughput.
            let eval = evaluate(model)?;
            record.val_loss = Some(eval.loss);
            record.val_accuracy = Some(eval.accuracy());
            record.val_top5_accuracy = Some(eval.top5_accuracy());
            if at.last {
                self.stats.final_eval = Some(eval);
            }
        }
        run.log.write(&record)?;
        run.progress.logged(&record, run.recipe.train.max_steps);
        self.stats.final_loss = loss;
        self.stats.peak_memory = self.stats.peak_memory.max(memory.map(|m| m.peak));
        self.stats.final_loss_scale = read.loss_scale;
        self.stats.skipped_steps = read.skipped_steps;
        check_finite(run.recipe, at.step + 1, loss, read.longest_nonfinite)?;
        self.tallies.logged();
        Ok(())
    }

    /// The loss and accuracy, with the loss scale, the skipped steps and the longest run of
    /// non-finite losses (those that this run tracks), in one transaction.
    fn read_back<M: AutodiffModule<B>>(
        &self,
        stepper: &Stepper<B, M>,
        out: StepOutput<B>,
    ) -> ReadBack {
        let correct = correct_count(out.logits, out.labels);
        let scale = stepper
            .scaler()
            .is_enabled()
            .then(|| stepper.scaler().scale_tensor());
        let [skipped, longest] = self.tallies.to_read();
        let tracked = [scale, skipped, longest];
        let mut transaction = Transaction::default().register(out.loss).register(correct);
        for tensor in tracked.iter().flatten() {
            transaction = transaction.register(Tensor::<B, 1>::from_inner(tensor.clone()));
        }
        let data = transaction.execute();
        let loss = data[0].iter::<f64>().next().unwrap_or(f64::NAN);
        let correct = data[1].iter::<i64>().next().unwrap_or(0) as f64;
        let mut values = data[2..].iter().map(|d| d.iter::<f64>().next());
        let [loss_scale, skipped_steps, longest_nonfinite] =
            tracked.map(|t| t.and_then(|_| values.next().flatten()));
        ReadBack {
            loss,
            correct,
            loss_scale,
            skipped_steps: skipped_steps.map(|s| s as u64),
            longest_nonfinite,
        }
    }
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
fn over_all_processes<B: Backend>(
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
