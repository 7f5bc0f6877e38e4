//! [`BatchSource`]: what the loop and evaluation read batches from, images or text.

use anyhow::Result;
use burnacc_datasets::text::{TextBatch, TextLoader};
use burnacc_datasets::{HostBatch, Loader};

/// The batches of one epoch; they own what they read, so they can move to another thread.
pub type EpochBatches<H> = Box<dyn Iterator<Item = Result<H>> + Send>;

/// Epochs of host batches `H`.
pub trait BatchSource<H> {
    /// The batches of epoch `epoch` (its own shuffle when the source shuffles).
    fn batches(&self, epoch: u64) -> EpochBatches<H> {
        self.batches_from(epoch, 0)
    }
    /// The batches of epoch `epoch` after its first `first_batch`, which are skipped without
    /// being built (a resumed run).
    fn batches_from(&self, epoch: u64, first_batch: usize) -> EpochBatches<H>;
    /// Samples in `batch` (the loss averages over them).
    fn samples(batch: &H) -> usize;
}

impl BatchSource<HostBatch> for Loader {
    fn batches_from(&self, epoch: u64, first_batch: usize) -> EpochBatches<HostBatch> {
        Box::new(
            self.epoch_from(epoch, first_batch)
                .map(|batch| batch.map_err(anyhow::Error::from)),
        )
    }

    fn samples(batch: &HostBatch) -> usize {
        batch.labels.len()
    }
}

impl BatchSource<TextBatch> for TextLoader {
    fn batches_from(&self, epoch: u64, first_batch: usize) -> EpochBatches<TextBatch> {
        Box::new(
            self.epoch_from(epoch, first_batch)
                .map(|batch| batch.map_err(anyhow::Error::from)),
        )
    }

    fn samples(batch: &TextBatch) -> usize {
        batch.labels.len()
    }
}
