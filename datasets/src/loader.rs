//! A multi-threaded batch loader with deterministic order and bounded read-ahead.
//!
//! For epoch `e`, the sample order is `0..len` shuffled by an RNG seeded from `(seed, e)`
//! (or kept as is), cut into batches of `batch_size`. Worker threads claim batch indices in
//! order and build them; the consumer reorders them by batch index, so the stream of batches
//! is the same for any number of workers and any timing. Sample `i`'s augmentation seed is
//! derived from `(seed, e, i)` (dataset index, not position), so it too is independent of
//! the workers. At most `workers + prefetch` batches are being built or waiting at any time.
//! Dropping an [`Epoch`] early stops its workers after their current sample and joins them.

use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

use rand::seq::SliceRandom;

use crate::DataError;
use crate::sample::{HostBatch, ImageDataset};
use crate::seed::{derive_seed, rng_for, tag};
use crate::shard::Shard;

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
        let job = Arc::new(Job {
            dataset: self.dataset.clone(),
            order,
            batch_size: self.config.batch_size,
            seed: self.config.seed,
            epoch,
            cancelled: AtomicBool::new(false),
        });
        let num_batches = job.order.len().div_ceil(job.batch_size);
        let workers = if self.config.workers == 0 || num_batches == 0 {
            None
        } else {
            Some(Workers::spawn(
                job.clone(),
                num_batches,
                self.config.workers,
                self.config.prefetch,
            ))
        };
        Epoch {
            job,
            workers,
            next: 0,
            num_batches,
            finished: false,
        }
    }
}

/// What every worker of one epoch shares.
struct Job {
    dataset: Arc<dyn ImageDataset>,
    order: Vec<usize>,
    batch_size: usize,
    seed: u64,
    epoch: u64,
    cancelled: AtomicBool,
}

impl Job {
    /// Builds batch `b`; `Ok(None)` if cancelled meanwhile.
    fn build(&self, b: usize) -> Result<Option<HostBatch>, DataError> {
        let indices =
            &self.order[b * self.batch_size..((b + 1) * self.batch_size).min(self.order.len())];
        let shape = self.dataset.shape();
        let mut images = Vec::with_capacity(indices.len() * shape.iter().product::<usize>());
        let mut labels = Vec::with_capacity(indices.len());
        for &index in indices {
            if self.cancelled.load(Ordering::Relaxed) {
                return Ok(None);
            }
            let seed = derive_seed(&[self.seed, tag::SAMPLE, self.epoch, index as u64]);
            let Some(sample) = self.dataset.get(index, seed)? else {
                continue;
            };
            if sample.shape != shape || sample.image.len() != shape.iter().product::<usize>() {
                return Err(DataError::ShapeMismatch {
                    index,
                    expected: shape,
                    found: sample.shape,
                });
            }
            images.extend_from_slice(&sample.image);
            labels.push(sample.label as i64);
        }
        Ok(Some(HostBatch {
            images,
            shape: [labels.len(), shape[0], shape[1], shape[2]],
            labels,
        }))
    }
}

/// Claim window shared by workers and consumer.
struct Window {
    /// Next batch index to claim.
    next_claim: usize,
    /// Batches the consumer has taken.
    consumed: usize,
}

/// The worker threads of one epoch.
struct Workers {
    window: Arc<(Mutex<Window>, Condvar)>,
    rx: Receiver<(usize, Result<Option<HostBatch>, DataError>)>,
    handles: Vec<JoinHandle<()>>,
    /// Batches received out of order, waiting for their turn.
    pending: BTreeMap<usize, Result<Option<HostBatch>, DataError>>,
}

impl Workers {
    fn spawn(job: Arc<Job>, num_batches: usize, workers: usize, prefetch: usize) -> Self {
        let ahead = workers + prefetch;
        let window = Arc::new((
            Mutex::new(Window {
                next_claim: 0,
                consumed: 0,
            }),
            Condvar::new(),
        ));
        let (tx, rx) = sync_channel(ahead);
        let handles = (0..workers.min(num_batches))
            .map(|w| {
                let (job, window, tx) = (job.clone(), window.clone(), tx.clone());
                std::thread::Builder::new()
                    .name(format!("burnacc-loader-{w}"))
                    .spawn(move || worker_loop(&job, &window, &tx, num_batches, ahead))
                    .expect("spawning a loader thread")
            })
            .collect();
        Workers {
            window,
            rx,
            handles,
            pending: BTreeMap::new(),
        }
    }

    /// Waits for batch `b` (all earlier ones have been taken).
    fn take(&mut self, b: usize) -> Result<Option<HostBatch>, DataError> {
        let result = loop {
            if let Some(r) = self.pending.remove(&b) {
                break r;
            }
            match self.rx.recv() {
                Ok((i, r)) => {
                    self.pending.insert(i, r);
                }
                // Every worker is gone without sending `b` (cannot happen: panics are caught).
                Err(_) => break Err(DataError::WorkerPanicked { batch: b }),
            }
        };
        let (lock, cvar) = &*self.window;
        lock.lock().unwrap_or_else(|e| e.into_inner()).consumed = b + 1;
        cvar.notify_all();
        result
    }
}

fn worker_loop(
    job: &Job,
    window: &(Mutex<Window>, Condvar),
    tx: &SyncSender<(usize, Result<Option<HostBatch>, DataError>)>,
    num_batches: usize,
    ahead: usize,
) {
    let (lock, cvar) = window;
    loop {
        let b = {
            let mut w = lock.lock().unwrap_or_else(|e| e.into_inner());
            while !job.cancelled.load(Ordering::Relaxed)
                && w.next_claim < num_batches
                && w.next_claim >= w.consumed + ahead
            {
                w = cvar.wait(w).unwrap_or_else(|e| e.into_inner());
            }
            if job.cancelled.load(Ordering::Relaxed) || w.next_claim >= num_batches {
                return;
            }
            w.next_claim += 1;
            w.next_claim - 1
        };
        let result = std::panic::catch_unwind(AssertUnwindSafe(|| job.build(b)))
            .unwrap_or(Err(DataError::WorkerPanicked { batch: b }));
        if job.cancelled.load(Ordering::Relaxed) || tx.send((b, result)).is_err() {
            return;
        }
    }
}

/// The batches of one epoch, in order; see [`Loader::epoch`]. `Send`, so it can be moved to
/// a prefetching thread. Dropping it stops and joins its workers.
pub struct Epoch {
    job: Arc<Job>,
    workers: Option<Workers>,
    next: usize,
    num_batches: usize,
    finished: bool,
}

impl Epoch {
    /// Batch indices not yet yielded (an upper bound when corrupt samples are skipped).
    pub fn remaining(&self) -> usize {
        if self.finished {
            0
        } else {
            self.num_batches - self.next
        }
    }

    fn stop(&mut self) {
        self.finished = true;
        self.job.cancelled.store(true, Ordering::Relaxed);
        if let Some(workers) = self.workers.take() {
            let Workers {
                window,
                rx,
                handles,
                ..
            } = workers;
            // Taking the lock orders the flag before any worker's next check-then-wait.
            drop(window.0.lock().unwrap_or_else(|e| e.into_inner()));
            window.1.notify_all();
            drop(rx);
            for h in handles {
                let _ = h.join();
            }
        }
    }
}

impl Iterator for Epoch {
    type Item = Result<HostBatch, DataError>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.finished && self.next < self.num_batches {
            let b = self.next;
            self.next += 1;
            let result = match &mut self.workers {
                Some(w) => w.take(b),
                None => self.job.build(b),
            };
            match result {
                Ok(Some(batch)) if batch.is_empty() => continue,
                Ok(Some(batch)) => return Some(Ok(batch)),
                Ok(None) => unreachable!("batches are only cancelled when the epoch stops"),
                Err(e) => {
                    self.stop();
                    return Some(Err(e));
                }
            }
        }
        self.stop();
        None
    }
}

impl Drop for Epoch {
    fn drop(&mut self) {
        self.stop();
    }
}
