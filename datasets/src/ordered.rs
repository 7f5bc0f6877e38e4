//! Batches built on worker threads and served in batch order, with bounded read-ahead: the
//! engine under the image [`crate::Loader`] and the [`crate::TextLoader`].
//!
//! A [`BatchJob`] knows how to build batch `b` of an epoch from `b` alone. Worker threads claim
//! batch indices in increasing order and build them; the consumer reorders what arrives by
//! batch index, so the stream is the same for any number of workers and any timing. At most
//! `workers + prefetch` batches are being built or waiting at any time. A panic while building
//! is caught and served as [`DataError::WorkerPanicked`] in that batch's place; an error ends
//! the stream. Dropping an [`OrderedBatches`] stops its workers after their current batch
//! (or, for jobs that look at the flag, their current sample) and joins them.

use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

use crate::DataError;

/// Builds the batches of one epoch by index; shared by every worker of that epoch.
pub(crate) trait BatchJob: Send + Sync + 'static {
    /// What a batch is (host vectors).
    type Batch: Send + 'static;
    /// Thread names: `{name}-{worker}`.
    const THREAD_NAME: &'static str;

    /// Builds batch `b`; `Ok(None)` if `cancelled` was seen set meanwhile (the batch is not
    /// wanted any more).
    fn build(&self, b: usize, cancelled: &AtomicBool) -> Result<Option<Self::Batch>, DataError>;
}

type Built<T> = (usize, Result<Option<T>, DataError>);

/// The batches `0..num_batches` of a [`BatchJob`], in order.
pub(crate) struct OrderedBatches<J: BatchJob> {
    job: Arc<J>,
    cancelled: Arc<AtomicBool>,
    workers: Option<Workers<J::Batch>>,
    next: usize,
    num_batches: usize,
    finished: bool,
}

impl<J: BatchJob> OrderedBatches<J> {
    /// Starts `workers` threads (none when 0: batches are then built by [`Self::next_batch`]
    /// on the calling thread) that may run `workers + prefetch` batches ahead.
    pub(crate) fn start(job: J, num_batches: usize, workers: usize, prefetch: usize) -> Self {
        let job = Arc::new(job);
        let cancelled = Arc::new(AtomicBool::new(false));
        let workers = (workers > 0 && num_batches > 0).then(|| {
            Workers::spawn(
                job.clone(),
                cancelled.clone(),
                num_batches,
                workers,
                prefetch,
            )
        });
        OrderedBatches {
            job,
            cancelled,
            workers,
            next: 0,
            num_batches,
            finished: false,
        }
    }

    /// Batch indices not yet served (an upper bound when a job leaves batches out).
    pub(crate) fn remaining(&self) -> usize {
        if self.finished {
            0
        } else {
            self.num_batches - self.next
        }
    }

    /// The next batch in order; `None` when all were served or after an error.
    pub(crate) fn next_batch(&mut self) -> Option<Result<J::Batch, DataError>> {
        if self.finished || self.next >= self.num_batches {
            self.stop();
            return None;
        }
        let b = self.next;
        self.next += 1;
        let result = match &mut self.workers {
            Some(w) => w.take(b),
            None => catch_build(&*self.job, b, &self.cancelled),
        };
        match result {
            Ok(Some(batch)) => Some(Ok(batch)),
            Ok(None) => unreachable!("batches are only cancelled when the stream stops"),
            Err(e) => {
                self.stop();
                Some(Err(e))
            }
        }
    }

    fn stop(&mut self) {
        self.finished = true;
        self.cancelled.store(true, Ordering::Relaxed);
        if let Some(workers) = self.workers.take() {
            workers.join();
        }
    }
}

impl<J: BatchJob> Drop for OrderedBatches<J> {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Builds batch `b`, a panic turned into [`DataError::WorkerPanicked`].
fn catch_build<J: BatchJob>(
    job: &J,
    b: usize,
    cancelled: &AtomicBool,
) -> Result<Option<J::Batch>, DataError> {
    std::panic::catch_unwind(AssertUnwindSafe(|| job.build(b, cancelled)))
        .unwrap_or(Err(DataError::WorkerPanicked { batch: b }))
}

/// Claim window shared by workers and consumer.
struct Window {
    /// Next batch index to claim.
    next_claim: usize,
    /// Batches the consumer has taken.
    consumed: usize,
}

/// The worker threads of one stream.
struct Workers<T> {
    window: Arc<(Mutex<Window>, Condvar)>,
    rx: Receiver<Built<T>>,
    handles: Vec<JoinHandle<()>>,
    /// Batches received out of order, waiting for their turn.
    pending: BTreeMap<usize, Result<Option<T>, DataError>>,
}

impl<T: Send + 'static> Workers<T> {
    fn spawn<J: BatchJob<Batch = T>>(
        job: Arc<J>,
        cancelled: Arc<AtomicBool>,
        num_batches: usize,
        workers: usize,
        prefetch: usize,
    ) -> Self {
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
                let (job, cancelled, window, tx) =
                    (job.clone(), cancelled.clone(), window.clone(), tx.clone());
                std::thread::Builder::new()
                    .name(format!("{}-{w}", J::THREAD_NAME))
                    .spawn(move || worker_loop(&*job, &cancelled, &window, &tx, num_batches, ahead))
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
    fn take(&mut self, b: usize) -> Result<Option<T>, DataError> {
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

    /// Wakes the workers (the cancel flag is already set) and joins them.
    fn join(self) {
        let Workers {
            window,
            rx,
            handles,
            ..
        } = self;
        // Taking the lock orders the flag before any worker's next check-then-wait.
        drop(window.0.lock().unwrap_or_else(|e| e.into_inner()));
        window.1.notify_all();
        drop(rx);
        for h in handles {
            let _ = h.join();
        }
    }
}

fn worker_loop<J: BatchJob>(
    job: &J,
    cancelled: &AtomicBool,
    window: &(Mutex<Window>, Condvar),
    tx: &SyncSender<Built<J::Batch>>,
    num_batches: usize,
    ahead: usize,
) {
    let (lock, cvar) = window;
    loop {
        let b = {
            let mut w = lock.lock().unwrap_or_else(|e| e.into_inner());
            while !cancelled.load(Ordering::Relaxed)
                && w.next_claim < num_batches
                && w.next_claim >= w.consumed + ahead
            {
                w = cvar.wait(w).unwrap_or_else(|e| e.into_inner());
            }
            if cancelled.load(Ordering::Relaxed) || w.next_claim >= num_batches {
                return;
            }
            w.next_claim += 1;
            w.next_claim - 1
        };
        let result = catch_build(job, b, cancelled);
        if cancelled.load(Ordering::Relaxed) || tx.send((b, result)).is_err() {
            return;
        }
    }
}
