//! The progress display: an indicatif bar on a terminal, plain lines otherwise (CI logs).

use crate::log::StepRecord;
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;

/// Progress over the run's steps.
pub struct Progress {
    bar: Option<ProgressBar>,
    /// Shows nothing at all (data-parallel ranks other than 0).
    silent: bool,
}

impl Progress {
    /// A bar of `total` steps when stderr is a terminal and `quiet` is false.
    pub fn new(total: usize, quiet: bool) -> Self {
        let bar = (!quiet && std::io::stderr().is_terminal()).then(|| {
            let bar = ProgressBar::new(total as u64);
            bar.set_style(
                ProgressStyle::with_template(
                    "{spinner} step {pos}/{len} [{bar:30}] {msg} | {elapsed_precise} ETA {eta}",
                )
                .expect("the template is valid")
                .progress_chars("=> "),
            );
            bar
        });
        Self { bar, silent: false }
    }

    /// Progress that shows nothing.
    pub fn silent() -> Self {
        Self {
            bar: None,
            silent: true,
        }
    }

    /// Starts the bar at `done` steps (a resumed run).
    pub fn resumed_at(&self, done: usize) {
        if let Some(bar) = &self.bar {
            bar.set_position(done as u64);
            bar.reset_eta();
        }
    }

    /// One step done.
    pub fn step(&self) {
        if let Some(bar) = &self.bar {
            bar.inc(1);
        }
    }

    /// Shows a logged step (loss, samples/s); a plain line when there is no bar.
    pub fn logged(&self, r: &StepRecord, total: usize) {
        let speed = r
            .samples_per_sec
            .map(|s| format!(" | {s:.1} samples/s"))
            .unwrap_or_default();
        let val = match (r.val_loss, r.val_accuracy, r.val_top5_accuracy) {
            (Some(loss), Some(top1), Some(top5)) => {
                format!(" | val loss {loss:.4} acc {top1:.3} top-5 {top5:.3}")
            }
            _ => String::new(),
        };
        let text = format!(
            "loss {:.4} | acc {:.3} | lr {:.3e}{speed}{val}",
            r.loss, r.train_accuracy, r.lr
        );
        match &self.bar {
            Some(bar) => bar.set_message(text),
            None if self.silent => {}
            None => eprintln!("step {}/{total} {text}", r.step),
        }
    }

    /// Prints a line above the bar (or plainly).
    pub fn println(&self, line: &str) {
        match &self.bar {
            Some(bar) => bar.println(line),
            None if self.silent => {}
            None => eprintln!("{line}"),
        }
    }

    /// Removes the bar, leaving its last state on screen.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish();
        }
    }
}
