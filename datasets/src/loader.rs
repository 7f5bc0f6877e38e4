//! A multi-threaded image batch loader with deterministic order and bounded read-ahead.
//!
//! For epoch `e`, the sample order is `0..len` shuffled by an RNG seeded from `(seed, e)`
//! (or kept as is), cut into batches of `batch_size`. Worker threads build them and the
//! batches are served in order ([`crate::ordered`]), so the stream of batches is the same for
//! any number of workers and any timing. Sample `i`'s augmentation seed is
//! derived from `(seed, e, i)` (dataset index, not position), so it too is independent of
//! the workers. At most `workers + prefetch` batches are being built or waiting at any time.
//! Dropping an [`Epoch`] early stops its workers after their current sample and joins them.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rand::seq::SliceRandom;

use crate::DataError;
use crate::ordered::{BatchJob, OrderedBatches};
use crate::sample::{HostBatch, ImageDataset};
use crate::seed::{derive_seed, rng_for, tag};
use crate::shard::Shard;
use crate::transform::Normalize;

/// Loader settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoaderConfig {
    /// Samples per batch (≥ 1).
    pub batch_size: usize,
    /// Shuffle the sample order each epoch (from `seed` and the epoch number).
    pub shuffle: bool,
    /// Drop the last batch when it is smaller than `batch_size`.
    pub drop_last: bool,
    /// Worker threads; 0 builds batches on the iterating thread.
    pub workers: usize,
    /// Finished batches that may wait ahead of the consumer (queue depth), on top of the
    /// `workers` batches being built.
    pub prefetch: usize,
    /// Seed of the shuffles and of every sample's augmentation.
    pub seed: u64,
}

impl Default for LoaderConfig {
    /// Batch 32, shuffled, last batch kept, 2 workers, prefetch 2, seed 0.
    fn default() -> Self {
        LoaderConfig {
            batch_size: 32,
            shuffle: true,
            drop_last: false,
            workers: 2,
            prefetch: 2,
            seed: 0,
        }
    }
}

/// Serves a dataset in batches, epoch after epoch.
#[derive(Clone)]
pub struct Loader {
    dataset: Arc<dyn ImageDataset>,
    config: LoaderConfig,
    shard: Option<Shard>,
}

impl Loader {
    /// Errors if `batch_size` is 0.
    pub fn new(dataset: Arc<dyn ImageDataset>, config: LoaderConfig) -> Result<Self, DataError> {
        if config.batch_size == 0 {
            return Err(DataError::config("batch_size", 0, "must be at least 1"));
        }
        Ok(Loader {
            dataset,
            config,
            shard: None,
        })
    }

    /// This loader serving only `shard`'s share of each epoch's order (data-parallel ranks).
    pub fn sharded(self, shard: Shard) -> Self {
        Loader {
            shard: Some(shard),
            ..self
        }
    }

    /// Samples served per epoch before `drop_last`: the dataset, or the shard's share of it.
    fn samples(&self) -> usize {
        let n = self.dataset.len();
        self.shard.map_or(n, |shard| shard.len(n))
    }

    /// The dataset served.
    pub fn dataset(&self) -> &Arc<dyn ImageDataset> {
        &self.dataset
    }

    /// The settings.
    pub fn config(&self) -> &LoaderConfig {
        &self.config
    }

    /// Batches per epoch: `len / batch_size`, rounded up unless `drop_last`. With
    /// [`crate::CorruptPolicy::Skip`], an epoch may yield fewer (a batch whose samples were
    /// all skipped is left out).
    pub fn num_batches(&self) -> usize {
        let (n, b) = (self.samples(), self.config.batch_size);
        if self.config.drop_last {
            n / b
        } else {
            n.div_ceil(b)
        }
    }

    /// Dataset indices of epoch `epoch`, in serving order (before cutting into batches); a
    /// sharded loader's share of the whole dataset's order.
    pub fn epoch_order(&self, epoch: u64) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.dataset.len()).collect();
        if self.config.shuffle {
            order.shuffle(&mut rng_for(&[self.config.seed, tag::SHUFFLE, epoch]));
        }
        if let Some(shard) = self.shard {
            order = shard.take(&order);
        }
        order.truncate(
            self.num_batches()
                .saturating_mul(self.config.batch_size)
                .min(order.len()),
        );
        order
    }

    /// The batches of epoch `epoch`, in order. An error (e.g. a corrupt image under
    /// [`crate::CorruptPolicy::Fail`]) is yielded in its batch's place and ends the epoch.
    pub fn epoch(&self, epoch: u64) -> Epoch {
        self.epoch_from(epoch, 0)
    }

    /// The batches of epoch `epoch` after its first `first_batch` (which are not built): what
    /// a resumed run still has to train on. The same batches as [`Loader::epoch`]'s from that
    /// position, augmentation included (each sample's draws depend on its index and the
    /// epoch, not on its position).
    pub fn epoch_from(&self, epoch: u64, first_batch: usize) -> Epoch {
        let mut order = self.epoch_order(epoch);
        order.drain(
            ..first_batch
                .saturating_mul(self.config.batch_size)
                .min(order.len()),
        );
        let num_batches = order.len().div_ceil(self.config.batch_size);
        let job = ImageJob {
            dataset: self.dataset.clone(),
            normalize: self.dataset.normalize(),
            order,
            batch_size: self.config.batch_size,
            seed: self.config.seed,
            epoch,
        };
        Epoch {
            batches: OrderedBatches::start(
                job,
                num_batches,
                self.config.workers,
                self.config.prefetch,
            ),
        }
    }
}

/// Builds the batches of one epoch; shared by its workers.
struct ImageJob {
    dataset: Arc<dyn ImageDataset>,
    normalize: Normalize,
    order: Vec<usize>,
    batch_size: usize,
    seed: u64,
    epoch: u64,
}

impl BatchJob for ImageJob {
    type Batch = HostBatch;
    const THREAD_NAME: &'static str = "burnacc-loader";

    fn build(&self, b: usize, cancelled: &AtomicBool) -> Result<Option<HostBatch>, DataError> {
        let indices =
            &self.order[b * self.batch_size..((b + 1) * self.batch_size).min(self.order.len())];
        let shape = self.dataset.shape();
        let mut pixels = Vec::with_capacity(indices.len() * shape.iter().product::<usize>());
        let mut labels = Vec::with_capacity(indices.len());
        for &index in indices {
            if cancelled.load(Ordering::Relaxed) {
                return Ok(None);
            }
            let seed = derive_seed(&[self.seed, tag::SAMPLE, self.epoch, index as u64]);
            let Some(sample) = self.dataset.get(index, seed)? else {
                continue;
            };
            if sample.shape != shape || sample.pixels.len() != shape.iter().product::<usize>() {
                return Err(DataError::ShapeMismatch {
                    index,
                    expected: shape,
                    found: sample.shape,
                });
            }
            pixels.extend_from_slice(&sample.pixels);
            labels.push(sample.label as i64);
        }
        Ok(Some(HostBatch {
            pixels,
            shape: [labels.len(), shape[0], shape[1], shape[2]],
            labels,
            normalize: self.normalize.clone(),
        }))
    }
}

/// The batches of one epoch, in order; see [`Loader::epoch`]. `Send`, so it can be moved to
/// a prefetching thread. Dropping it stops and joins its workers.
pub struct Epoch {
    batches: OrderedBatches<ImageJob>,
}

impl Epoch {
    /// Batch indices not yet yielded (an upper bound when corrupt samples are skipped).
    pub fn remaining(&self) -> usize {
        self.batches.remaining()
    }
}

impl Iterator for Epoch {
    type Item = Result<HostBatch, DataError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            match self.batches.next_batch()? {
                // Every sample of the batch was skipped as corrupt.
                Ok(batch) if batch.is_empty() => continue,
                other => return Some(other),
            }
        }
    }
}
