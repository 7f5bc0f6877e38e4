//! The epoch-batch iterator of the loop: `train.accumulate` device batches per optimizer
//! step, with their place in the epochs and the time the step waited for them.

use super::super::batch::Upload;
use super::super::prefetch::{DeviceBatches, Epochs};
use super::super::source::BatchSource;
use crate::recipe::Recipe;
use crate::resume::LoopStart;
use anyhow::Result;
use burn::tensor::backend::Backend;
use std::time::{Duration, Instant};

/// The batches of one optimizer step.
pub(super) struct StepBatch<D> {
    /// One device batch per micro-batch.
    pub micro: Vec<D>,
    /// Samples over the micro-batches.
    pub samples: usize,
    /// The epoch of the last micro-batch.
    pub epoch: u64,
    /// Batches of `epoch` trained on after this step (a checkpoint's data position).
    pub batches_in_epoch: usize,
    /// Time the step waited for its batches.
    pub waited: Duration,
}

/// The loader's batches, uploaded `data.device_prefetch` steps ahead, grouped by step.
pub(super) struct StepBatches<B: Backend, H: Upload<B>, S> {
    batches: DeviceBatches<B, H, S>,
    accumulate: usize,
}

impl<B: Backend, H: Upload<B>, S: BatchSource<H> + Send + 'static> StepBatches<B, H, S> {
    /// `loader`'s batches from `start`'s position on.
    pub fn new(loader: S, start: &LoopStart, recipe: &Recipe, device: &B::Device) -> Self {
        let epochs = Epochs::new(loader, start.epoch, start.batches_in_epoch);
        Self {
            batches: DeviceBatches::new(epochs, device, recipe.data.device_prefetch),
            accumulate: recipe.train.accumulate,
        }
    }

    /// The next step's micro-batches.
    pub fn next_step(&mut self) -> Result<StepBatch<H::OnDevice>> {
        let waiting = Instant::now();
        let mut micro = Vec::with_capacity(self.accumulate);
        let (mut samples, mut epoch, mut batches_in_epoch) = (0, 0, 0);
        for _ in 0..self.accumulate {
            let placed = self.batches.next_batch()?;
            (epoch, batches_in_epoch) = (placed.epoch, placed.batches_in_epoch);
            samples += placed.samples;
            micro.push(placed.batch);
        }
        Ok(StepBatch {
            micro,
            samples,
            epoch,
            batches_in_epoch,
            waited: waiting.elapsed(),
        })
    }
}
