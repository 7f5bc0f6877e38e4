//! Wall-clock timing of device work: warm-up, then the median over repetitions, each
//! repetition bracketed by device syncs (`B::sync`).
//!
//! Two ways to issue the calls of one repetition:
//!
//! - [`Sync::Batched`]: `calls` calls back to back, one sync at the end. For eager backends
//!   (`CubeBackend`, Flex), where every call launches its kernels at once; the sync cost is
//!   shared by the batch, so small kernels are not timed as launch-plus-sync round trips.
//! - [`Sync::EachCall`]: a sync after every call. For Burn's lazy fusion backend, where calls
//!   left in one queue could be fused *with each other* (several calls reading the same input
//!   once), which no training step would see; and for the optimizer, which runs once per step.
//!
//! Every result is kept alive until the repetition's last sync, so a lazy backend cannot skip
//! work whose outputs are dropped unread; `memory_budget` bounds what a batch holds.

use std::time::{Duration, Instant};

use burn::tensor::backend::Backend;

/// How the calls of one repetition are synchronised (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sync {
    /// One sync after a batch of calls.
    Batched,
    /// One sync after every call.
    EachCall,
}

/// Repetitions, warm-up and batch sizing.
#[derive(Clone, Debug)]
pub struct Timer {
    /// Timed repetitions; the median is reported.
    pub reps: usize,
    /// Untimed calls first (kernel compilation, autotuning, memory pool growth).
    pub warmup: usize,
    /// Aimed duration of one repetition; sets the number of calls in it.
    pub target: Duration,
    /// Most calls in one repetition.
    pub max_calls: usize,
    /// Most bytes of results one repetition may hold alive.
    pub memory_budget: usize,
}

impl Timer {
    /// Median seconds per call of `call` on `device`. `out_bytes`: bytes of one call's results
    /// (0 when the call keeps nothing, e.g. an optimizer step that replaces its state).
    pub fn time<B: Backend, T>(
        &self,
        device: &B::Device,
        sync: Sync,
        out_bytes: usize,
        mut call: impl FnMut() -> T,
    ) -> f64 {
        let wait = || B::sync(device).expect("device sync failed");
        for _ in 0..self.warmup {
            let out = call();
            wait();
            drop(out);
        }
        // One call alone sizes the repetitions.
        let start = Instant::now();
        let out = call();
        wait();
        let one = start.elapsed().as_secs_f64().max(1e-7);
        drop(out);
        let by_time = (self.target.as_secs_f64() / one).ceil() as usize;
        let by_memory = self
            .memory_budget
            .checked_div(out_bytes)
            .unwrap_or(usize::MAX);
        let calls = by_time.min(by_memory).clamp(1, self.max_calls);

        let mut samples = Vec::with_capacity(self.reps);
        for _ in 0..self.reps {
            let mut kept = Vec::with_capacity(calls);
            wait();
            let start = Instant::now();
            for _ in 0..calls {
                kept.push(call());
                if sync == Sync::EachCall {
                    wait();
                }
            }
            wait();
            samples.push(start.elapsed().as_secs_f64() / calls as f64);
            drop(kept);
        }
        median(samples)
    }
}

/// Median of a non-empty sample (mean of the two middle values for an even count).
fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    let n = samples.len();
    if n % 2 == 1 {
        samples[n / 2]
    } else {
        (samples[n / 2 - 1] + samples[n / 2]) / 2.0
    }
}
