//! Batches of tokenized texts, epoch after epoch, in a deterministic order.
//!
//! For epoch `e`, the sample order is `0..len` shuffled by an RNG seeded from `(seed, e)`
//! (or kept as is), cut into batches of `batch_size` samples, each laid out by
//! [`pad_batch`] or, with packing, [`pack_batch`]. As for images, worker threads build the
//! batches ahead of the consumer and they are served in order, the same for any number of
//! workers. Tokenisation happens once, before the first epoch ([`crate::text::tokenize_all`]):
//! an epoch reads token ids, and re-tokenising the same texts every epoch would only redo
//! work.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use rand::seq::SliceRandom;

use crate::DataError;
use crate::ordered::{BatchJob, OrderedBatches};
use crate::seed::{rng_for, tag};
use crate::shard::Shard;
use crate::text::batch::{TextBatch, pack_batch, pad_batch};

/// Text loader settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TextLoaderConfig {
    /// Samples per batch (≥ 1).
    pub batch_size: usize,
    /// Shuffle the sample order each epoch (from `seed` and the epoch number).
    pub shuffle: bool,
    /// Drop the last batch when it has fewer than `batch_size` samples.
    pub drop_last: bool,
    /// Seed of the shuffles.
    pub seed: u64,
    /// `Some(max_len)`: pack each batch's samples into rows of `max_len` tokens
    /// ([`pack_batch`]); `None`: one sample per row ([`pad_batch`]).
    pub packing: Option<usize>,
    /// Worker threads laying out batches; 0 builds them on the iterating thread.
    pub workers: usize,
    /// Finished batches that may wait ahead of the consumer, on top of the `workers` being
    /// built.
    pub prefetch: usize,
}

impl Default for TextLoaderConfig {
    /// Batch 32, shuffled, last batch kept, seed 0, no packing, 2 workers, prefetch 2.
    fn default() -> Self {
        TextLoaderConfig {
            batch_size: 32,
            shuffle: true,
            drop_last: false,
            seed: 0,
            packing: None,
            workers: 2,
            prefetch: 2,
        }
    }
}

/// Serves tokenized samples (e.g. from [`crate::text::tokenize_all`]) in [`TextBatch`]es.
#[derive(Clone, Debug)]
pub struct TextLoader {
    samples: Arc<Vec<Vec<u32>>>,
    labels: Arc<Vec<usize>>,
    config: TextLoaderConfig,
    shard: Option<Shard>,
}

impl TextLoader {
    /// Errors if `samples` and `labels` differ in length, `batch_size` is 0, a sample is
    /// empty, or (with packing) a sample is longer than the packing length.
    pub fn new(
        samples: Vec<Vec<u32>>,
        labels: Vec<usize>,
        config: TextLoaderConfig,
    ) -> Result<Self, DataError> {
        if config.batch_size == 0 {
            return Err(DataError::config("batch_size", 0, "must be at least 1"));
        }
        if samples.len() != labels.len() {
            return Err(DataError::config(
                "labels",
                format!("{} labels", labels.len()),
                format!("must number as many as the {} samples", samples.len()),
            ));
        }
        if let Some(i) = samples.iter().position(Vec::is_empty) {
            return Err(DataError::config(
                "samples",
                format!("sample {i} with no tokens"),
                "every sample needs at least one token",
            ));
        }
        let loader = TextLoader {
            samples: Arc::new(samples),
            labels: Arc::new(labels),
            config,
            shard: None,
        };
        loader.check_packing(loader.config.packing)?;
        Ok(loader)
    }

    /// Errors with [`DataError::SampleTooLong`] if a sample does not fit in `packing` tokens.
    fn check_packing(&self, packing: Option<usize>) -> Result<(), DataError> {
        let Some(max_len) = packing else {
            return Ok(());
        };
        match self.samples.iter().position(|s| s.len() > max_len) {
            Some(index) => Err(DataError::SampleTooLong {
                index,
                len: self.samples[index].len(),
                max_len,
            }),
            None => Ok(()),
        }
    }

    /// The settings.
    pub fn config(&self) -> &TextLoaderConfig {
        &self.config
    }

    /// This loader serving only `shard`'s share of each epoch's order (data-parallel ranks).
    pub fn sharded(self, shard: Shard) -> Self {
        TextLoader {
            shard: Some(shard),
            ..self
        }
    }

    /// Number of samples served per epoch before `drop_last` (a shard's share when sharded).
    pub fn num_samples(&self) -> usize {
        let n = self.samples.len();
        self.shard.map_or(n, |shard| shard.len(n))
    }

    /// Batches per epoch: `samples / batch_size`, rounded up unless `drop_last`.
    pub fn len(&self) -> usize {
        let (n, b) = (self.num_samples(), self.config.batch_size);
        if self.config.drop_last {
            n / b
        } else {
            n.div_ceil(b)
        }
    }

    /// Whether an epoch yields no batch.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Sample indices of epoch `epoch`, in serving order (dropped samples left out).
    pub fn epoch_order(&self, epoch: u64) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.samples.len()).collect();
        if self.config.shuffle {
            order.shuffle(&mut rng_for(&[self.config.seed, tag::SHUFFLE, epoch]));
        }
        if let Some(shard) = self.shard {
            order = shard.take(&order);
        }
        order.truncate(self.len() * self.config.batch_size);
        order
    }

    /// The [`TextBatch`]es of epoch `epoch`, in order; the same `(seed, epoch)` always gives
    /// the same batches.
    pub fn epoch(&self, epoch: u64) -> TextEpoch {
        self.epoch_from(epoch, 0)
    }

    /// The batches of epoch `epoch` after its first `first_batch` (which are not built): what
    /// a resumed run still has to train on.
    pub fn epoch_from(&self, epoch: u64, first_batch: usize) -> TextEpoch {
        let mut order = self.epoch_order(epoch);
        let batch_size = self.config.batch_size;
        order.drain(..first_batch.saturating_mul(batch_size).min(order.len()));
        let num_batches = order.len().div_ceil(batch_size);
        let job = self.job(order, self.config.packing);
        TextEpoch {
            batches: OrderedBatches::start(
                job,
                num_batches,
                self.config.workers,
                self.config.prefetch,
            ),
        }
    }

    /// Lays out the batches of `order` with `packing`.
    fn job(&self, order: Vec<usize>, packing: Option<usize>) -> TextJob {
        TextJob {
            samples: self.samples.clone(),
            labels: self.labels.clone(),
            order,
            batch_size: self.config.batch_size,
            packing,
        }
    }

    /// Padding slots / all token slots over the batches of epoch 0, laid out with `packing`
    /// instead of the configured layout (`None`: one sample per row). Compare
    /// `padding_fraction(None)` and `padding_fraction(Some(max_len))` to see what packing
    /// saves. Errors if a sample does not fit in the packing length.
    pub fn padding_fraction(&self, packing: Option<usize>) -> Result<f64, DataError> {
        self.check_packing(packing)?;
        let job = self.job(self.epoch_order(0), packing);
        let (mut padding, mut total) = (0usize, 0usize);
        for indices in job.order.chunks(self.config.batch_size) {
            let batch = job.lay_out(indices);
            padding += batch.padding_tokens();
            total += batch.tokens();
        }
        Ok(if total == 0 {
            0.0
        } else {
            padding as f64 / total as f64
        })
    }
}

/// Lays out the batches of one epoch; shared by its workers.
struct TextJob {
    samples: Arc<Vec<Vec<u32>>>,
    labels: Arc<Vec<usize>>,
    order: Vec<usize>,
    batch_size: usize,
    packing: Option<usize>,
}

impl TextJob {
    /// The batch of the samples at `indices`, laid out by `packing` (see
    /// [`TextLoaderConfig::packing`]). Every sample fits: `new` and `padding_fraction` check.
    fn lay_out(&self, indices: &[usize]) -> TextBatch {
        let samples: Vec<&[u32]> = indices
            .iter()
            .map(|&i| self.samples[i].as_slice())
            .collect();
        let labels: Vec<usize> = indices.iter().map(|&i| self.labels[i]).collect();
        match self.packing {
            None => pad_batch(&samples, &labels),
            Some(max_len) => pack_batch(&samples, &labels, max_len)
                .expect("every sample was checked to fit the packing length"),
        }
    }
}

impl BatchJob for TextJob {
    type Batch = TextBatch;
    const THREAD_NAME: &'static str = "burnacc-text-loader";

    fn build(&self, b: usize, _cancelled: &AtomicBool) -> Result<Option<TextBatch>, DataError> {
        let end = ((b + 1) * self.batch_size).min(self.order.len());
        Ok(Some(self.lay_out(&self.order[b * self.batch_size..end])))
    }
}

/// The batches of one epoch of a [`TextLoader`], in order. `Send`; dropping it stops and
/// joins its workers. A panic while laying out a batch arrives as
/// [`DataError::WorkerPanicked`] and ends the epoch.
pub struct TextEpoch {
    batches: OrderedBatches<TextJob>,
}

impl TextEpoch {
    /// Batches not yet yielded.
    pub fn remaining(&self) -> usize {
        self.batches.remaining()
    }
}

impl Iterator for TextEpoch {
    type Item = Result<TextBatch, DataError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.batches.next_batch()
    }
}
