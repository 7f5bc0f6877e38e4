//! One benchmark result: a JSON line of `results.jsonl`, written by the `bench` binary and, with
//! the same fields, by `scripts/torch_bench.py`, so one table and one chart show both.

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// How a configuration ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// All steps ran.
    Ok,
    /// The configuration ran past its time limit; the fields measured so far are kept.
    Timeout,
    /// It stopped with an error (`reason`).
    Failed,
    /// Not run: the combination does not exist here (`reason`), e.g. bf16 on lavapipe.
    Skipped,
}

impl Status {
    /// The name written to results (`ok`, `timeout`, `failed`, `skipped`).
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Timeout => "timeout",
            Status::Failed => "failed",
            Status::Skipped => "skipped",
        }
    }
}

/// Speed and memory of one model × mode × precision on one device.
///
/// Times are wall-clock seconds with the device synchronised before the clock is read.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct BenchRecord {
    /// `burnacc` or `pytorch`.
    pub framework: String,
    /// Model name as in recipes: `resnet50`, `bert-base`, …
    pub model: String,
    /// `eager` | `fused` | `acc` (burnacc); `eager` | `compile` (PyTorch).
    pub mode: String,
    /// `f32` or the autocast dtype (`bf16`, `f16`).
    pub precision: String,
    /// Device as a recipe names it (`cpu`, `wgpu`, `cuda:0`).
    pub device: String,
    /// Samples per step.
    pub batch: usize,
    /// Input size per sample: `224px` (images) or `seq128` (text).
    pub input: String,
    /// `synthetic`: one batch kept on the device; `real`: the recipe's data through the loader
    /// and the device prefetcher. Absent in records of other frameworks (synthetic).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<String>,
    /// How it ended.
    pub status: Option<Status>,
    /// `cold`: the run started with an empty kernel cache (compilation and autotuning from
    /// scratch); `warm`: with the cache a previous run of the same case filled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_cache: Option<String>,
    /// Why it failed or was skipped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Process start → model built and inputs on the device (runtime start-up included).
    pub init_secs: Option<f64>,
    /// The first training step (kernel compilation, autotuning, graph capture).
    pub first_step_secs: Option<f64>,
    /// Process start → end of the warm-up steps: what a user waits before full speed.
    pub warmup_secs: Option<f64>,
    /// Median over the timed windows of the mean step time.
    pub step_secs: Option<f64>,
    /// Mean step time of each timed window.
    #[serde(default)]
    pub window_step_secs: Vec<f64>,
    /// Real data: median over the timed windows of the fraction of the window the steps
    /// waited for their batch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_wait_fraction: Option<f64>,
    /// `batch / step_secs`.
    pub samples_per_sec: Option<f64>,
    /// Peak memory: the allocator's peak on the CPU, the memory pool's reservation on CubeCL
    /// devices, `torch.cuda.max_memory_allocated` in PyTorch.
    pub peak_memory_bytes: Option<u64>,
    /// CubeCL devices: kernels launched per training step (median over the timed windows),
    /// counted from CubeCL's logs (`device_work`); absent on the CPU, in other frameworks'
    /// records and with `--no-count-launches`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launches_per_step: Option<f64>,
    /// CubeCL devices: memory reservations (buffers taken from the pools) per training step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reservations_per_step: Option<f64>,
    /// CubeCL devices: bytes of those reservations per training step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reserved_bytes_per_step: Option<f64>,
    /// CubeCL devices: the kernels launched most in the last timed window, with their launches
    /// per step, most first (where fusion could save launches).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub top_kernels: Vec<(String, f64)>,
    /// Training steps completed (warm-up included).
    pub steps_done: usize,
    /// The backend stack (burnacc) or the PyTorch / CUDA versions.
    #[serde(default)]
    pub stack: String,
}

impl BenchRecord {
    /// `model/mode/precision`, the label of a bar.
    pub fn label(&self) -> String {
        let framework = if self.framework == "burnacc" {
            String::new()
        } else {
            format!("{} ", self.framework)
        };
        let warm = if self.kernel_cache.as_deref() == Some("warm") {
            " (warm)"
        } else {
            ""
        };
        let real = if self.data.as_deref() == Some("real") {
            " real data"
        } else {
            ""
        };
        format!("{framework}{} {}{real}{warm}", self.mode, self.precision)
    }
}

/// Reads every record of a JSON-lines file (blank lines skipped); errors name the file and line.
pub fn read_records(path: &Path) -> Result<Vec<BenchRecord>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read benchmark results {}", path.display()))?;
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(i, line)| {
            serde_json::from_str(line)
                .with_context(|| format!("{}:{}: not a benchmark record", path.display(), i + 1))
        })
        .collect()
}

/// The records as JSON lines.
pub fn to_json_lines(records: &[BenchRecord]) -> String {
    records
        .iter()
        .map(|r| serde_json::to_string(r).expect("records serialise") + "\n")
        .collect()
}
