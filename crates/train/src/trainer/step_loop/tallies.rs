//! Counts kept on the device across steps, read only at logged steps: steps skipped (loss
//! scaling, `on_nonfinite = "skip"`) and runs of consecutive non-finite losses.

use super::super::step::{StepOutput, Stepper};
use crate::recipe::{OnNonFinite, Recipe};
use crate::resume::{LoopStart, read_skipped};
use burn::module::AutodiffModule;
use burn::tensor::Tensor;
use burnacc_checkpoint::CheckpointBackend;

/// f32 `[1]` tensors on the inner backend.
type Count<B> = Tensor<<B as burn::tensor::backend::AutodiffBackend>::InnerBackend, 1>;

/// The device-side counts a run tracks.
pub(super) struct DeviceTallies<B: CheckpointBackend> {
    /// Steps skipped on the device so far (loss scaling, or `on_nonfinite = "skip"`).
    skipped: Option<Count<B>>,
    /// `on_nonfinite = "skip"`: the current and the longest run of consecutive steps with a
    /// non-finite loss since the last logged step.
    nonfinite_runs: Option<(Count<B>, Count<B>)>,
}

impl<B: CheckpointBackend> DeviceTallies<B> {
    /// The counts `recipe` and `stepper` need, the skipped steps continuing from `start`.
    pub fn new<M: AutodiffModule<B>>(
        recipe: &Recipe,
        stepper: &Stepper<B, M>,
        start: &LoopStart,
        device: &B::Device,
    ) -> Self {
        let skipping = recipe.train.on_nonfinite == OnNonFinite::Skip;
        let skipped = (stepper.scaler().is_enabled() || skipping).then(|| {
            let so_far = start.skipped_steps.unwrap_or(0) as f32;
            Tensor::from_floats([so_far], device)
        });
        let nonfinite_runs = skipping.then(|| {
            let zero = Tensor::zeros([1], device);
            (zero.clone(), zero)
        });
        Self {
            skipped,
            nonfinite_runs,
        }
    }

    /// Adds a step's outcome, on the device.
    pub fn add(&mut self, out: &StepOutput<B>) {
        if let (Some(total), Some(found)) = (self.skipped.take(), out.found_inf.clone()) {
            self.skipped = Some(total + found);
        }
        if let (Some((current, longest)), Some(nonfinite)) =
            (self.nonfinite_runs.take(), out.nonfinite_loss.clone())
        {
            let current = (current + 1.0) * nonfinite;
            // max(longest, current) with adds only.
            let longest = (longest - current.clone()).clamp_min(0.0) + current.clone();
            self.nonfinite_runs = Some((current, longest));
        }
    }

    /// The skipped steps and the longest non-finite run, those tracked, to read at a logged
    /// step.
    pub fn to_read(&self) -> [Option<Count<B>>; 2] {
        [
            self.skipped.clone(),
            self.nonfinite_runs.as_ref().map(|(_, l)| l.clone()),
        ]
    }

    /// After a logged step: the next window's longest run starts from the current one.
    pub fn logged(&mut self) {
        if let Some((current, _)) = self.nonfinite_runs.take() {
            self.nonfinite_runs = Some((current.clone(), current));
        }
    }

    /// Steps skipped so far, read from the device (a checkpoint records them).
    pub fn skipped_so_far(&self) -> Option<u64> {
        self.skipped.as_ref().map(read_skipped)
    }
}
