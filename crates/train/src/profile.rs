//! `train --profile`: a Chrome trace (`trace.json`, opens in https://ui.perfetto.dev or
//! chrome://tracing) of a window of training steps.
//!
//! Two tracks: **phases** (step, forward, backward, optimizer), with the device synchronised at
//! each boundary so a span is the device's time for that phase; and, in mode `acc`, **ops**:
//! every op the model calls through `Acc`, with its host-side time (on CubeCL devices the time
//! to record or enqueue it; see `burnacc_backend::trace`). Steps outside the window run
//! unsynchronised as usual.

use crate::run_dir::write_atomic;
use anyhow::Result;
use burnacc_backend::trace::OpSpan;
use serde::Serialize;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Thread ids of the trace's tracks.
const PHASE_TRACK: u32 = 1;
const OP_TRACK: u32 = 2;

/// One complete event (`"ph": "X"`) of the Chrome trace format.
#[derive(Serialize, Debug, Clone)]
struct TraceEvent {
    name: String,
    cat: &'static str,
    ph: &'static str,
    /// Start, µs since the profiler started.
    ts: f64,
    /// Duration, µs.
    dur: f64,
    pid: u32,
    tid: u32,
    #[serde(skip_serializing_if = "serde_json::Value::is_null")]
    args: serde_json::Value,
}

/// Collects the spans of the profiled steps and writes them as a Chrome trace.
pub struct Profiler {
    steps: Range<usize>,
    file: PathBuf,
    origin: Instant,
    events: Vec<TraceEvent>,
}

impl Profiler {
    /// Profiles steps `steps` (0-based) into `file`.
    pub fn new(steps: Range<usize>, file: PathBuf) -> Self {
        Self {
            steps,
            file,
            origin: Instant::now(),
            events: Vec::new(),
        }
    }

    /// The window of `count` steps a run of `total` steps profiles: after `skip` warm-up steps
    /// (compilation and autotuning) when the run is long enough, else its last steps.
    pub fn window(total: usize, skip: usize, count: usize) -> Range<usize> {
        let count = count.min(total);
        let start = skip.min(total - count);
        start..start + count
    }

    /// Whether step `step` (0-based) is profiled.
    pub fn covers(&self, step: usize) -> bool {
        self.steps.contains(&step)
    }

    /// Whether `step` is the last profiled step.
    pub fn is_last(&self, step: usize) -> bool {
        self.steps.end == step + 1
    }

    /// The trace file.
    pub fn file(&self) -> &Path {
        &self.file
    }

    fn micros(&self, t: Instant) -> f64 {
        t.saturating_duration_since(self.origin).as_secs_f64() * 1e6
    }

    /// Records a span on the phase track.
    pub fn phase(&mut self, name: &str, start: Instant, end: Instant, args: serde_json::Value) {
        let ts = self.micros(start);
        self.events.push(TraceEvent {
            name: name.to_owned(),
            cat: "phase",
            ph: "X",
            ts,
            dur: self.micros(end) - ts,
            pid: 1,
            tid: PHASE_TRACK,
            args,
        });
    }

    /// Records op spans on the op track.
    pub fn ops(&mut self, spans: &[OpSpan]) {
        for span in spans {
            let ts = self.micros(span.start);
            self.events.push(TraceEvent {
                name: span.name.to_owned(),
                cat: "op",
                ph: "X",
                ts,
                dur: self.micros(span.end) - ts,
                pid: 1,
                tid: OP_TRACK,
                args: serde_json::Value::Null,
            });
        }
    }

    /// The trace as Chrome's JSON object format, with named tracks.
    pub fn to_json(&self) -> serde_json::Value {
        let name = |tid: u32, name: &str| {
            serde_json::json!({"name": "thread_name", "ph": "M", "pid": 1, "tid": tid,
                               "args": {"name": name}})
        };
        let mut events = vec![
            serde_json::json!({"name": "process_name", "ph": "M", "pid": 1,
                               "args": {"name": "burnacc train"}}),
            name(PHASE_TRACK, "phases (device-synchronised)"),
            name(OP_TRACK, "Acc ops (host)"),
        ];
        events.extend(
            self.events
                .iter()
                .map(|e| serde_json::to_value(e).expect("events serialise")),
        );
        serde_json::json!({"traceEvents": events, "displayTimeUnit": "ms"})
    }

    /// Writes the trace file atomically.
    pub fn write(&self) -> Result<()> {
        let bytes = serde_json::to_vec(&self.to_json())?;
        write_atomic(&self.file, &bytes)
    }
}
