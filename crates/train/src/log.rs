//! The run's JSONL log: one JSON object per logged step, flushed as it is written.

use crate::memory::MemoryReading;
use anyhow::{Context, Result};
use serde::Serialize;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

/// One line of `log.jsonl`.
#[derive(Clone, Debug, Serialize)]
pub struct StepRecord {
    /// Optimizer steps done (1 after the first step).
    pub step: usize,
    /// Epoch of the batch (0-based).
    pub epoch: u64,
    /// Mean cross-entropy of the step's batch.
    pub loss: f64,
    /// Accuracy of the step's batch, computed from the same forward pass.
    pub train_accuracy: f64,
    /// Learning rate used by the step.
    pub lr: f64,
    /// Samples per second since the previous logged step (device synchronised at both ends).
    pub samples_per_sec: Option<f64>,
    /// Mean seconds per step since the previous logged step.
    pub step_secs: Option<f64>,
    /// Mean milliseconds per step spent waiting for the next batch from the loader over the
    /// interval (decoding, collation and read-ahead not keeping up); the rest of `step_secs`
    /// is the step itself.
    pub data_wait_ms: Option<f64>,
    /// Device memory (in use, peak); see `memory`.
    pub memory: Option<MemoryReading>,
    /// The loss scale after this step (loss scaling on); `loss` is the unscaled loss.
    pub loss_scale: Option<f64>,
    /// Steps skipped so far on the device: by the loss scaler for inf/NaN gradients (loss
    /// scaling on), for a non-finite loss (`train.on_nonfinite = "skip"`).
    pub skipped_steps: Option<u64>,
    /// Host reads through `Acc` since the previous logged step, not counting the logged
    /// metrics themselves (acc stacks; zero means the steps never waited on the device).
    pub host_reads: Option<u64>,
    /// Held-out mean cross-entropy, at the steps that evaluate (`train.eval_every`, the
    /// last with `train.eval`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub val_loss: Option<f64>,
    /// Held-out top-1 accuracy, at the steps that evaluate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub val_accuracy: Option<f64>,
    /// Held-out top-5 accuracy, at the steps that evaluate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub val_top5_accuracy: Option<f64>,
}

/// Appends [`StepRecord`]s to a JSONL file.
pub struct JsonlLog {
    /// `None`: records are dropped (data-parallel ranks other than 0 write nothing).
    out: Option<BufWriter<File>>,
}

impl JsonlLog {
    /// Creates `path`; fails if it exists, so an earlier run's log is never truncated.
    pub fn create(path: &Path) -> Result<Self> {
        let file = File::options()
            .write(true)
            .create_new(true)
            .open(path)
            .with_context(|| format!("cannot create {}", path.display()))?;
        Ok(Self {
            out: Some(BufWriter::new(file)),
        })
    }

    /// Continues `path` after step `step` of a resumed run: the lines of later steps (written
    /// after the checkpoint by the run that stopped) and a line cut short by a crash are
    /// dropped, atomically, and new records are appended.
    pub fn resume(path: &Path, step: usize) -> Result<Self> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
        };
        let kept: String = text
            .split_inclusive('\n')
            .filter(|line| line.ends_with('\n'))
            .filter(|line| {
                serde_json::from_str::<serde_json::Value>(line)
                    .ok()
                    .and_then(|record| record["step"].as_u64())
                    .is_some_and(|s| s as usize <= step)
            })
            .collect();
        crate::run_dir::write_atomic(path, kept.as_bytes())?;
        let file = File::options()
            .append(true)
            .open(path)
            .with_context(|| format!("cannot open {}", path.display()))?;
        Ok(Self {
            out: Some(BufWriter::new(file)),
        })
    }

    /// A log that writes nothing.
    pub fn discard() -> Self {
        Self { out: None }
    }

    /// Writes one record as a line and flushes it.
    pub fn write(&mut self, record: &impl Serialize) -> Result<()> {
        let Some(out) = &mut self.out else {
            return Ok(());
        };
        serde_json::to_writer(&mut *out, record)?;
        out.write_all(b"\n")?;
        out.flush()?;
        Ok(())
    }
}
