//! Runs each benchmark case in a child process (this same binary, `--case <json>`), so every
//! case starts with empty CubeCL caches and memory pools, a crash or panic ends one case only,
//! and a case that runs past its time limit is killed while keeping what it measured.

use super::case::{BenchCase, run_case_here};
use super::device_work::{count_in_cubecl_logs, install_counter};
use super::record::{BenchRecord, Status};
use anyhow::{Context, Result};
use burnacc_train::kernel_cache::{KERNEL_CACHE_ENV, configure_cubecl};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Prefix of the lines through which a child reports its record.
const RECORD_LINE: &str = "BENCH_RECORD ";

/// The child side: runs `case` and prints its record after every step of progress.
pub fn child_main(case_json: &str, started: Instant) -> Result<()> {
    let case: BenchCase =
        serde_json::from_str(case_json).context("--case: not a benchmark case")?;
    let caches = configure_cubecl(|config| {
        if case.count_launches {
            count_in_cubecl_logs(config);
        }
    });
    eprintln!("kernels: {caches}");
    if case.count_launches && !install_counter() {
        eprintln!("bench: another logger is installed: kernel launches are not counted");
    }
    let print = |record: &BenchRecord| {
        let line = serde_json::to_string(record).expect("records serialise");
        let mut out = std::io::stdout().lock();
        // The parent may have gone (killed at its time limit): nothing to report to then.
        let _ = writeln!(out, "{RECORD_LINE}{line}");
        let _ = out.flush();
    };
    let record = run_case_here(&case, started, &print);
    print(&record);
    Ok(())
}

enum Event {
    Record(Box<BenchRecord>),
    Stderr(String),
    Exited,
}

/// Runs `case` in a child process of `exe`, for at most `limit`, with CubeCL's caches in
/// `kernel_cache`. Child stderr is passed through (prefixed), so slow start-ups show what they
/// are doing.
pub fn run_case_in_child(
    exe: &Path,
    case: &BenchCase,
    limit: Duration,
    kernel_cache: &Path,
) -> Result<BenchRecord> {
    let json = serde_json::to_string(case)?;
    let mut child = Command::new(exe)
        .arg("--case")
        .arg(&json)
        .env(KERNEL_CACHE_ENV, kernel_cache)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot start {}", exe.display()))?;
    let (tx, rx) = mpsc::channel();
    let stdout = child.stdout.take().expect("piped");
    let stderr = child.stderr.take().expect("piped");
    let out_tx = tx.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(json) = line.strip_prefix(RECORD_LINE)
                && let Ok(record) = serde_json::from_str(json)
            {
                let _ = out_tx.send(Event::Record(Box::new(record)));
            }
        }
        let _ = out_tx.send(Event::Exited);
    });
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(Event::Stderr(line));
        }
    });

    let deadline = Instant::now() + limit;
    let mut last: Option<BenchRecord> = None;
    let mut last_error = String::new();
    let timed_out = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(Event::Record(record)) => last = Some(*record),
            Ok(Event::Stderr(line)) => {
                eprintln!("  | {line}");
                if !line.trim().is_empty() {
                    last_error = line;
                }
            }
            Ok(Event::Exited) | Err(mpsc::RecvTimeoutError::Disconnected) => break false,
            Err(mpsc::RecvTimeoutError::Timeout) => break true,
        }
    };
    if timed_out {
        let _ = child.kill();
    }
    let exit = child
        .wait()
        .context("cannot wait for the benchmark process")?;
    let mut record = last.unwrap_or_else(|| case.blank_record(None));
    if timed_out {
        record.status = Some(Status::Timeout);
        record.reason = Some(format!(
            "killed after {} s, {} step(s) done",
            limit.as_secs(),
            record.steps_done
        ));
    } else if record.status.is_none() {
        record.status = Some(Status::Failed);
        record.reason = Some(format!("{exit}: {last_error}"));
    }
    Ok(record)
}
