//! Kernels launched and device memory reserved on CubeCL devices, counted from CubeCL's own
//! logs: a device-independent measure of what fusion saves (fewer launches, fewer
//! intermediate tensors), the same on lavapipe as on a GPU for the same graph.
//!
//! CubeCL logs every kernel its client launches when the profiling logger is at `minimal`
//! (`ComputeClient::launch_inner`, by kernel name, without timing), and every reservation of
//! its memory manager when the memory logger is at `full` ("Reserved memory 4.00 KB using
//! dynamic pool"). [`count_in_cubecl_logs`] turns both on and sends them to the `log` crate;
//! [`install_counter`] installs a `log` logger that counts them instead of printing them.
//!
//! The counts include everything the device client runs: autotune candidates during the first
//! steps, the optimizer's kernels, the loss. Reserved bytes are as CubeCL prints them (three
//! significant digits, powers of 1000), so sums are exact to about 0.5 %. CubeCL sends its
//! log messages through a channel to a thread of its own: [`settled`] waits for that thread
//! to catch up after a device synchronisation.
//!
//! Counting costs a formatted kernel name and a channel message per launch, on the thread that
//! submits kernels; `bench --no-count-launches` leaves it off.

use burn::cubecl::config::CubeClRuntimeConfig;
use burn::cubecl::config::memory::MemoryLogLevel;
use burn::cubecl::config::profiling::ProfilingLogLevel;
use cubecl_common::config::logger::LogCrateLevel;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{LazyLock, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The module that forwards CubeCL's log sinks to the `log` crate.
const CUBECL_LOG_TARGET: &str = "cubecl_common::config::logger";

/// Work a CubeCL device client did, counted since [`install_counter`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeviceWork {
    /// Kernels launched.
    pub launches: u64,
    /// Memory reservations (tensor buffers and other device allocations from the pools).
    pub reservations: u64,
    /// Bytes of those reservations.
    pub reserved_bytes: u64,
}

impl DeviceWork {
    /// The work done between `earlier` and `self`.
    pub fn since(self, earlier: DeviceWork) -> DeviceWork {
        DeviceWork {
            launches: self.launches - earlier.launches,
            reservations: self.reservations - earlier.reservations,
            reserved_bytes: self.reserved_bytes - earlier.reserved_bytes,
        }
    }
}

/// One CubeCL log message, as far as counting is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogEvent {
    /// A kernel launch (the profiling logger at `minimal` prints the kernel's name: the whole
    /// message).
    Launch,
    /// A reservation of this many bytes.
    Reserved(u64),
    /// Anything else the memory logger says (new pages, clean-ups).
    Other,
}

/// What `message` (one line of CubeCL's profiling or memory log) records.
///
/// Memory messages start with the memory manager's name in brackets; a reservation reads
/// `[name] Reserved memory 4.00 KB using dynamic pool` or `[name] Reserved memory 4096 using
/// persistent memory`. Every other message comes from the profiling logger, one per launch.
pub fn classify(message: &str) -> LogEvent {
    if !message.starts_with('[') {
        return LogEvent::Launch;
    }
    let Some((_, rest)) = message.split_once("Reserved memory ") else {
        return LogEvent::Other;
    };
    let size = rest.split(" using").next().unwrap_or_default();
    parse_bytes(size).map_or(LogEvent::Other, LogEvent::Reserved)
}

/// Bytes of a size as CubeCL prints it: `999 B`, `4.00 KB`, `1.23 MB` (powers of 1000), or
/// a bare number of bytes.
pub fn parse_bytes(size: &str) -> Option<u64> {
    let mut parts = size.split_whitespace();
    let value: f64 = parts.next()?.parse().ok()?;
    let scale = match parts.next() {
        None | Some("B") => 1.0,
        Some(unit) => {
            let prefix = unit.strip_suffix('B')?;
            let exp = "KMGTPEZY".find(prefix).filter(|_| prefix.len() == 1)? as i32 + 1;
            1000f64.powi(exp)
        }
    };
    Some((value * scale).round() as u64)
}

static RESERVATIONS: AtomicU64 = AtomicU64::new(0);
static RESERVED_BYTES: AtomicU64 = AtomicU64::new(0);
static INSTALLED: OnceLock<bool> = OnceLock::new();
/// Launches per kernel name (their sum is every launch).
static BY_KERNEL: LazyLock<Mutex<HashMap<String, u64>>> = LazyLock::new(Default::default);

fn by_kernel() -> std::sync::MutexGuard<'static, HashMap<String, u64>> {
    BY_KERNEL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Counts CubeCL's log records; ignores every other record.
struct Counter;

impl log::Log for Counter {
    fn enabled(&self, metadata: &log::Metadata) -> bool {
        metadata.target() == CUBECL_LOG_TARGET
    }

    fn log(&self, record: &log::Record) {
        if !self.enabled(record.metadata()) {
            return;
        }
        let message = record.args().to_string();
        match classify(&message) {
            LogEvent::Launch => {
                // CubeCL names a launch `Executing <kernel> | <runtime>`.
                let name = message.strip_prefix("Executing ").unwrap_or(&message);
                *by_kernel().entry(name.to_owned()).or_default() += 1;
            }
            LogEvent::Reserved(bytes) => {
                RESERVATIONS.fetch_add(1, Ordering::Relaxed);
                RESERVED_BYTES.fetch_add(bytes, Ordering::Relaxed);
            }
            LogEvent::Other => {}
        }
    }

    fn flush(&self) {}
}

/// Turns on the CubeCL loggers that [`install_counter`] counts: launches (profiling at
/// `minimal`) and reservations (memory at `full`), both sent to the `log` crate at trace level
/// and nowhere else. For [`burnacc_train::kernel_cache::configure_cubecl`].
pub fn count_in_cubecl_logs(config: &mut CubeClRuntimeConfig) {
    let profiling = &mut config.profiling.logger;
    profiling.level = ProfilingLogLevel::Minimal;
    profiling.log = Some(LogCrateLevel::Trace);
    let memory = &mut config.memory.logger;
    memory.level = MemoryLogLevel::Full;
    memory.log = Some(LogCrateLevel::Trace);
}

/// Installs the counting `log` logger for this process. False when another logger was
/// installed first (nothing is counted then).
pub fn install_counter() -> bool {
    *INSTALLED.get_or_init(|| {
        let ok = log::set_logger(&Counter).is_ok();
        if ok {
            log::set_max_level(log::LevelFilter::Trace);
        }
        ok
    })
}

/// Whether [`install_counter`] installed the counter in this process.
pub fn counting() -> bool {
    INSTALLED.get().copied().unwrap_or(false)
}

/// Launches per kernel name so far (call it after [`settled`]).
pub fn launches_by_kernel() -> HashMap<String, u64> {
    by_kernel().clone()
}

/// The kernels launched most between two [`launches_by_kernel`] readings, most first: at most
/// `top` names with their launches.
pub fn most_launched(
    before: &HashMap<String, u64>,
    after: &HashMap<String, u64>,
    top: usize,
) -> Vec<(String, u64)> {
    let mut launched: Vec<(String, u64)> = after
        .iter()
        .map(|(name, &n)| (name.clone(), n - before.get(name).copied().unwrap_or(0)))
        .filter(|&(_, n)| n > 0)
        .collect();
    launched.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    launched.truncate(top);
    launched
}

fn current() -> DeviceWork {
    DeviceWork {
        launches: by_kernel().values().sum(),
        reservations: RESERVATIONS.load(Ordering::Relaxed),
        reserved_bytes: RESERVED_BYTES.load(Ordering::Relaxed),
    }
}

/// The counts once CubeCL's logging thread has caught up: call it after synchronising the
/// device, when every launch so far has been submitted and its message sent. Waits until the
/// counts stay the same for 20 ms (at most 5 s).
pub fn settled() -> DeviceWork {
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut last = current();
    loop {
        std::thread::sleep(Duration::from_millis(20));
        let now = current();
        if now == last || Instant::now() > deadline {
            return now;
        }
        last = now;
    }
}
