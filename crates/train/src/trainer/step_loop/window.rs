//! The metrics window: what happened between two logged steps (time, samples, steps, time
//! waiting for data, host reads through `Acc`), and the medians over the run's windows.

use super::LoopStats;
use super::median;
use burnacc_backend::counters;
use std::time::{Duration, Instant};

/// Throughput of one closed window.
pub(super) struct WindowRates {
    /// Samples per second over every process (`None` for the first step, which compiles).
    pub samples_per_sec: Option<f64>,
    /// Seconds per step.
    pub step_secs: Option<f64>,
    /// Milliseconds per step waited for data.
    pub data_wait_ms: Option<f64>,
}

/// The steps since the last logged step.
pub(super) struct MetricsWindow {
    started: Instant,
    opened: Instant,
    samples: usize,
    steps: usize,
    waited: Duration,
    /// Host reads are counted on `acc` stacks only.
    count_reads: bool,
    reads_baseline: counters::OpCounts,
    speeds: Vec<f64>,
    wait_fractions: Vec<f64>,
}

impl MetricsWindow {
    /// A window opened now; `count_reads`: report host reads through `Acc`.
    pub fn new(count_reads: bool) -> Self {
        Self {
            started: Instant::now(),
            opened: Instant::now(),
            samples: 0,
            steps: 0,
            waited: Duration::ZERO,
            count_reads,
            reads_baseline: counters::snapshot(),
            speeds: Vec::new(),
            wait_fractions: Vec::new(),
        }
    }

    /// A step of `samples` samples that waited `waited` for them.
    pub fn add_step(&mut self, samples: usize, waited: Duration) {
        self.samples += samples;
        self.steps += 1;
        self.waited += waited;
    }

    /// Host reads through `Acc` since the window opened or the last [`Self::skip_reads`]
    /// (`None` off `acc` stacks).
    pub fn host_reads(&self) -> Option<u64> {
        self.count_reads.then(|| {
            counters::snapshot()
                .since(&self.reads_baseline)
                .host_reads()
        })
    }

    /// Reads made by the loop itself (the logged values, a checkpoint) are not the steps'.
    pub fn skip_reads(&mut self) {
        self.reads_baseline = counters::snapshot();
    }

    /// Seconds since the window opened.
    pub fn elapsed_secs(&self) -> f64 {
        self.opened.elapsed().as_secs_f64()
    }

    /// Closes the window at a logged step, `elapsed` seconds after it opened (`first`: the
    /// run's first step, timed from the loop's start and kept out of the medians), and opens
    /// the next. `processes` is the number of data-parallel processes, whose samples count
    /// too.
    pub fn close(
        &mut self,
        elapsed: f64,
        first: bool,
        processes: usize,
        stats: &mut LoopStats,
    ) -> WindowRates {
        let (samples_per_sec, step_secs) = if first {
            stats.first_step_secs = self.started.elapsed().as_secs_f64();
            (None, Some(stats.first_step_secs))
        } else {
            let speed = (self.samples * processes) as f64 / elapsed;
            self.speeds.push(speed);
            self.wait_fractions
                .push(self.waited.as_secs_f64() / elapsed);
            (Some(speed), Some(elapsed / self.steps as f64))
        };
        let data_wait_ms = Some(self.waited.as_secs_f64() * 1e3 / self.steps as f64);
        self.opened = Instant::now();
        self.samples = 0;
        self.steps = 0;
        self.waited = Duration::ZERO;
        WindowRates {
            samples_per_sec,
            step_secs,
            data_wait_ms,
        }
    }

    /// The medians over the closed windows into `stats`.
    pub fn finish(mut self, stats: &mut LoopStats) {
        stats.median_samples_per_sec = median(&mut self.speeds);
        stats.median_data_wait_fraction = median(&mut self.wait_fractions);
    }
}
