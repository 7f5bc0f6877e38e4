//! One optimizer step — forward under autocast, loss, loss scaling, backward (through the
//! checkpoint tape when blocks were checkpointed), unscale, sync-free update — shared by the
//! training loop and the benchmark, so both time the same work.

use crate::recipe::{OnNonFinite, Recipe};
use anyhow::{Context, Result};
use burn::module::AutodiffModule;
use burn::nn::loss::{CrossEntropyLoss, CrossEntropyLossConfig};
use burn::optim::GradientsParams;
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
        let guard = self
            .autocast
            .map(autocast)
            .transpose()
            .expect("the recipe's amp.dtype is f16 or bf16");
        // Every step draws from a generator seeded for it, and every block run through the
        // tape from one seeded for its position: dropout inside a checkpointed block draws the
        // same masks when it is recomputed, and a step draws the same values whichever blocks
        // are checkpointed (what the recomputes of an earlier step drew does not carry over).
        let step_seed = block_seed(self.seed, self.steps);
        B::seed(&self.device, step_seed);
        let mut tape = CheckpointTape::with_rng_replay(step_seed);
        self.steps += 1;
        let (logits, labels) = forward(&model, &mut tape);
        let loss = self.loss_fn.forward(logits.clone(), labels.clone());
        drop(guard);
        let output_loss = loss.clone().detach();
        let nonfinite_loss = self.skip_nonfinite.then(|| {
            output_loss
                .clone()
                .inner()
                .is_finite()
                .bool_not()
                .float()
                .cast(DType::F32)
        });
        mark(Phase::Forward)?;
        let scaled = self.scaler.scale(loss)?;
        let checkpointed_blocks = tape.len();
        let grads = if tape.is_empty() {
            GradientsParams::from_grads(scaled.backward(), &model)
        } else {
            tape.backward(scaled, &model)
        };
        mark(Phase::Backward)?;
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
        Ok((
            model,
            StepOutput {
                loss: output_loss,
                logits: logits.detach(),
                labels,
                found_inf,
                nonfinite_loss,
                checkpointed_blocks,
            },
        ))
    }
}
