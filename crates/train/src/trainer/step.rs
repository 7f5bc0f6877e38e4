//! One optimizer step — forward under autocast, loss, loss scaling, backward (through the
//! checkpoint tape when blocks were checkpointed), unscale, sync-free update — shared by the
//! training loop and the benchmark, so both time the same work.

use crate::recipe::{OnNonFinite, Recipe};
use anyhow::{Context, Result};
use burn::module::AutodiffModule;
use burn::nn::loss::{CrossEntropyLoss, CrossEntropyLossConfig};
use burn::optim::{GradientsAccumulator, GradientsParams};
use burn::tensor::{DType, FloatDType, Int, Tensor};
use burnacc_amp::optim::{OptimizerStateData, SyncFreeOptimizer};
use burnacc_amp::scaler::{GradScaler, GradScalerState};
use burnacc_backend::autocast::autocast;
use burnacc_checkpoint::{CheckpointBackend, CheckpointTape, block_seed};

use super::task::build_optimizer;

/// The optimizer, loss scaler, loss and autocast dtype of a recipe: everything a step needs
/// besides the model and its input.
pub struct Stepper<B: CheckpointBackend, M> {
    optim: Box<dyn SyncFreeOptimizer<M, B>>,
    scaler: GradScaler<B>,
    loss_fn: CrossEntropyLoss<B>,
    autocast: Option<FloatDType>,
    /// `train.seed`: each step's random draws come from seeds derived from it.
    seed: u64,
    /// The device whose generator each step seeds.
    device: B::Device,
    /// Steps taken, so each step's checkpointed blocks get their own seeds.
    steps: usize,
    /// `train.on_nonfinite = "skip"`: a step whose loss is not finite is skipped on the device.
    skip_nonfinite: bool,
}

/// The parts of a step, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Forward pass and loss.
    Forward,
    /// Backward pass (with the recomputation of checkpointed blocks).
    Backward,
    /// The gradient sync with the other processes of a data-parallel run (nothing otherwise).
    AllReduce,
    /// Unscaling, the optimizer update and the loss-scale update.
    Optimizer,
}

impl Phase {
    /// `forward`, `backward`, `all_reduce`, `optimizer`.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Forward => "forward",
            Phase::Backward => "backward",
            Phase::AllReduce => "all_reduce",
            Phase::Optimizer => "optimizer",
        }
    }
}

/// Applied to a step's gradients between the backward pass and the unscale (see
/// [`Stepper::step_synced`]).
pub type GradientSync<'a, M> = &'a mut dyn FnMut(&M, GradientsParams) -> Result<GradientsParams>;

/// What one micro-batch leaves for its step.
struct MicroStep<B: CheckpointBackend> {
    /// Its weighted loss, detached, `[1]`.
    loss: Tensor<B, 1>,
    /// Its logits (detached) and labels.
    output: (Tensor<B, 2>, Tensor<B, 1, Int>),
    /// Its parameters' gradients (of the scaled loss).
    grads: GradientsParams,
    /// Blocks its forward pass checkpointed.
    checkpointed_blocks: usize,
}

/// What a step leaves for metrics, all detached device tensors (nothing is read back).
pub struct StepOutput<B: CheckpointBackend> {
    /// Unscaled loss, `[1]`.
    pub loss: Tensor<B, 1>,
    /// `[samples, classes]`.
    pub logits: Tensor<B, 2>,
    /// `[samples]`.
    pub labels: Tensor<B, 1, Int>,
    /// 1.0 when the update was skipped (the loss scaler found inf/NaN gradients, or the loss
    /// was not finite with `on_nonfinite = "skip"`), else 0.0, `[1]` (loss scaling or skipping
    /// on).
    pub found_inf: Option<Tensor<B::InnerBackend, 1>>,
    /// 1.0 when the loss was not finite, else 0.0, `[1]` (`on_nonfinite = "skip"`).
    pub nonfinite_loss: Option<Tensor<B::InnerBackend, 1>>,
    /// Blocks the forward pass checkpointed.
    pub checkpointed_blocks: usize,
}

impl<B: CheckpointBackend, M: AutodiffModule<B>> Stepper<B, M> {
    /// The recipe's optimizer (`[optim]`), loss scaler and autocast dtype (`[amp]`).
    pub fn new(recipe: &Recipe, device: &B::Device) -> Result<Self> {
        Ok(Self {
            optim: build_optimizer::<B, M>(&recipe.optim)?,
            scaler: GradScaler::<B>::new(crate::precision::scaler_config(&recipe.amp), device)
                .context("amp: invalid loss-scaler settings")?,
            loss_fn: CrossEntropyLossConfig::new().init(device),
            autocast: recipe
                .amp
                .autocast_dtype()
                .map(crate::precision::autocast_float_dtype),
            seed: recipe.train.seed,
            device: device.clone(),
            steps: 0,
            skip_nonfinite: recipe.train.on_nonfinite == OnNonFinite::Skip,
        })
    }

    /// The autocast dtype of the forward pass (`[amp]`), if any.
    pub fn autocast(&self) -> Option<FloatDType> {
        self.autocast
    }

    /// The loss scaler (its scale is a device tensor).
    pub fn scaler(&self) -> &GradScaler<B> {
        &self.scaler
    }

    /// Steps taken (each step's random draws are seeded from it).
    pub fn steps(&self) -> usize {
        self.steps
    }

    /// A host copy of the optimizer's state (reads the device).
    pub fn optimizer_state(&self) -> Result<OptimizerStateData> {
        Ok(self.optim.state()?)
    }

    /// The loss scaler's state (loss scaling on; reads the device).
    pub fn scaler_state(&self) -> Option<GradScalerState> {
        self.scaler.is_enabled().then(|| self.scaler.state())
    }

    /// Continues from a checkpoint: `steps` taken, the optimizer's and the loss scaler's
    /// state. Errors when the state does not fit this stepper (another optimizer, loss scaling
    /// on in one and off in the other).
    pub fn restore(
        &mut self,
        steps: usize,
        optimizer: OptimizerStateData,
        scaler: Option<GradScalerState>,
    ) -> Result<()> {
        match (scaler, self.scaler.is_enabled()) {
            (Some(state), true) => self
                .scaler
                .load_state(state)
                .context("the checkpoint's loss scaler")?,
            (None, false) => {}
            (saved, _) => anyhow::bail!(
                "the checkpoint was written with loss scaling {}, this run has it {}",
                if saved.is_some() { "on" } else { "off" },
                if self.scaler.is_enabled() {
                    "on"
                } else {
                    "off"
                }
            ),
        }
        self.optim
            .load_state(optimizer, &self.device)
            .context("the checkpoint's optimizer state")?;
        self.steps = steps;
        Ok(())
    }

    /// One step at learning rate `lr`. `forward` runs the model on the step's batch, under
    /// autocast when `[amp]` is on, returning logits `[samples, classes]` and labels
    /// `[samples]`; blocks it checkpoints on the tape are recomputed during backward.
    pub fn step(
        &mut self,
        model: M,
        lr: f64,
        forward: impl FnOnce(&M, &mut CheckpointTape<B>) -> (Tensor<B, 2>, Tensor<B, 1, Int>),
    ) -> Result<(M, StepOutput<B>)> {
        self.step_marked(model, lr, forward, &mut |_| Ok(()))
    }

    /// [`Stepper::step`], calling `mark` as each [`Phase`] ends (the profiler synchronises the
    /// device there and records the phase's span).
    pub fn step_marked(
        &mut self,
        model: M,
        lr: f64,
        forward: impl FnOnce(&M, &mut CheckpointTape<B>) -> (Tensor<B, 2>, Tensor<B, 1, Int>),
        mark: &mut dyn FnMut(Phase) -> Result<()>,
    ) -> Result<(M, StepOutput<B>)> {
        self.step_synced(model, lr, forward, mark, &mut |_, grads| Ok(grads))
    }

    /// [`Stepper::step_marked`] with `sync` applied to the gradients right after the backward
    /// pass, before the loss scaler unscales them and the optimizer steps: a data-parallel
    /// peer averages them with the other peers' there (`burnacc_ddp::Peer::all_reduce_gradients`),
    /// so every peer unscales, checks for inf/NaN and steps on the same gradients, as PyTorch
    /// DDP does under AMP.
    pub fn step_synced(
        &mut self,
        model: M,
        lr: f64,
        forward: impl FnOnce(&M, &mut CheckpointTape<B>) -> (Tensor<B, 2>, Tensor<B, 1, Int>),
        mark: &mut dyn FnMut(Phase) -> Result<()>,
        sync: GradientSync<'_, M>,
    ) -> Result<(M, StepOutput<B>)> {
        self.step_accumulated(model, lr, [forward], mark, sync)
    }

    /// One optimizer step over several micro-batches (`train.accumulate`), as
    /// [`Stepper::step_synced`] over one: each `forwards[i]` runs its micro-batch and its
    /// backward pass, the gradients are summed (each micro-batch's mean loss weighted `1 / k`,
    /// so equal micro-batches give the gradient of the joined batch's mean), then synced with
    /// the other processes once (PyTorch DDP's `no_sync` on the other micro-batches),
    /// unscaled, and applied in one update. The loss scaler scales every micro-batch's loss
    /// with the same scale. Micro-batch 0 draws the random values a step without accumulation
    /// draws; micro-batch `i` from a seed derived from the step's and `i`. The output holds
    /// the step's loss (the mean over the micro-batches) and every micro-batch's logits and
    /// labels, concatenated.
    pub fn step_accumulated<F>(
        &mut self,
        model: M,
        lr: f64,
        forwards: impl IntoIterator<Item = F>,
        mark: &mut dyn FnMut(Phase) -> Result<()>,
        sync: GradientSync<'_, M>,
    ) -> Result<(M, StepOutput<B>)>
    where
        F: FnOnce(&M, &mut CheckpointTape<B>) -> (Tensor<B, 2>, Tensor<B, 1, Int>),
    {
        let forwards: Vec<F> = forwards.into_iter().collect();
        let micro_batches = forwards.len();
        assert!(micro_batches > 0, "a step runs at least one micro-batch");
        // Every step draws from a generator seeded for it, and every block run through the
        // tape from one seeded for its position: dropout inside a checkpointed block draws the
        // same masks when it is recomputed, and a step draws the same values whichever blocks
        // are checkpointed (what the recomputes of an earlier step drew does not carry over).
        let step_seed = block_seed(self.seed, self.steps);
        self.steps += 1;
        let mut losses = Vec::with_capacity(micro_batches);
        let mut outputs = Vec::with_capacity(micro_batches);
        let mut summed: Option<GradientsParams> = None;
        let mut accumulator = GradientsAccumulator::<M>::new();
        let mut checkpointed_blocks = 0;
        for (i, forward) in forwards.into_iter().enumerate() {
            let seed = if i == 0 {
                step_seed
            } else {
                block_seed(step_seed, i)
            };
            let micro = self.micro_step(&model, forward, seed, micro_batches, mark)?;
            losses.push(micro.loss);
            outputs.push(micro.output);
            checkpointed_blocks = micro.checkpointed_blocks;
            if micro_batches == 1 {
                summed = Some(micro.grads);
            } else {
                accumulator.accumulate(&model, micro.grads);
            }
        }
        let grads = summed.unwrap_or_else(|| accumulator.grads());
        let output_loss = losses
            .into_iter()
            .reduce(|a, b| a + b)
            .expect("at least one micro-batch");
        let (model, found_inf, nonfinite_loss) =
            self.update(model, lr, grads, &output_loss, mark, sync)?;
        let (logits, labels) = if outputs.len() == 1 {
            outputs.pop().expect("one micro-batch")
        } else {
            let (logits, labels): (Vec<_>, Vec<_>) = outputs.into_iter().unzip();
            (Tensor::cat(logits, 0), Tensor::cat(labels, 0))
        };
        Ok((
            model,
            StepOutput {
                loss: output_loss,
                logits,
                labels,
                found_inf,
                nonfinite_loss,
                checkpointed_blocks,
            },
        ))
    }

    /// One micro-batch of `micro_batches`: its forward pass (drawing from `seed`, under
    /// autocast if on), its loss weighted `1 / micro_batches`, scaled, and its backward pass.
    fn micro_step<F>(
        &mut self,
        model: &M,
        forward: F,
        seed: u64,
        micro_batches: usize,
        mark: &mut dyn FnMut(Phase) -> Result<()>,
    ) -> Result<MicroStep<B>>
    where
        F: FnOnce(&M, &mut CheckpointTape<B>) -> (Tensor<B, 2>, Tensor<B, 1, Int>),
    {
        B::seed(&self.device, seed);
        let mut tape = CheckpointTape::with_rng_replay(seed);
        let guard = self
            .autocast
            .map(autocast)
            .transpose()
            .expect("the recipe's amp.dtype is f16 or bf16");
        let (logits, labels) = forward(model, &mut tape);
        let loss = self.loss_fn.forward(logits.clone(), labels.clone());
        drop(guard);
        // Without accumulation the loss is used as it is (bit for bit as ever).
        let loss = if micro_batches > 1 {
            loss.div_scalar(micro_batches as f64)
        } else {
            loss
        };
        let detached = loss.clone().detach();
        mark(Phase::Forward)?;
        let scaled = self.scaler.scale(loss)?;
        let checkpointed_blocks = tape.len();
        let grads = if tape.is_empty() {
            GradientsParams::from_grads(scaled.backward(), model)
        } else {
            tape.backward(scaled, model)
        };
        mark(Phase::Backward)?;
        Ok(MicroStep {
            loss: detached,
            output: (logits.detach(), labels),
            grads,
            checkpointed_blocks,
        })
    }

    /// The update of a step from its summed gradients `grads` and its loss `loss`: synced
    /// with the other processes, unscaled, applied unless the scaler found inf/NaN gradients
    /// or (with `on_nonfinite = "skip"`) the loss is not finite. Returns the model, whether
    /// the update was skipped and whether the loss was not finite (device flags, `[1]`).
    #[allow(clippy::type_complexity)]
    fn update(
        &mut self,
        model: M,
        lr: f64,
        grads: GradientsParams,
        loss: &Tensor<B, 1>,
        mark: &mut dyn FnMut(Phase) -> Result<()>,
        sync: GradientSync<'_, M>,
    ) -> Result<(
        M,
        Option<Tensor<B::InnerBackend, 1>>,
        Option<Tensor<B::InnerBackend, 1>>,
    )> {
        let nonfinite_loss = self.skip_nonfinite.then(|| {
            loss.clone()
                .inner()
                .is_finite()
                .bool_not()
                .float()
                .cast(DType::F32)
        });
        let grads = sync(&model, grads)?;
        mark(Phase::AllReduce)?;
        let grads = self.scaler.unscale(&model, grads)?;
        // Skipped on the device: overflowing gradients (the scaler) or a non-finite loss.
        let found_inf = match (self.scaler.found_inf(), nonfinite_loss.clone()) {
            (Some(overflow), Some(nonfinite)) => Some((overflow + nonfinite).clamp_max(1.0)),
            (overflow, nonfinite) => overflow.or(nonfinite),
        };
        let model = self.optim.step(lr, model, grads, found_inf.as_ref());
        self.scaler.update()?;
        mark(Phase::Optimizer)?;
        Ok((model, found_inf, nonfinite_loss))
    }
}
