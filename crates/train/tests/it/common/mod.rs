//! What the training tests share: a tiny recipe (ResNet-18 of width 8 on 16 px mock images)
//! and readers of a run's log.

#![allow(dead_code)] // each test file uses part of it

mod collect;
mod recipes;
pub use collect::Collect;
pub use recipes::{tiny_recipe, tiny_swin, tiny_swin_text};

use burnacc_train::trainer::RunSummary;
use std::path::Path;

/// The records of a run's `log.jsonl`.
pub fn records(summary: &RunSummary) -> Vec<serde_json::Value> {
    logged_records(&summary.run_dir)
}

/// The records of `run_dir/log.jsonl` (none when it has no log).
pub fn logged_records(run_dir: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(run_dir.join("log.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// The logged losses of the run in `run_dir`.
pub fn logged_losses(run_dir: &Path) -> Vec<f64> {
    logged_records(run_dir)
        .iter()
        .map(|r| r["loss"].as_f64().unwrap())
        .collect()
}

/// The logged losses of a run.
pub fn losses(summary: &RunSummary) -> Vec<f64> {
    logged_losses(&summary.run_dir)
}

/// `|a − b| / |b|`.
pub fn rel(a: f64, b: f64) -> f64 {
    (a - b).abs() / b.abs().max(1e-12)
}

/// Runs `launch --nproc-per-node 2 -- recipe --quiet extra…` on a free port and asserts it
/// succeeds within 10 minutes.
pub fn launch_two(recipe: &Path, extra: &[&std::ffi::OsStr]) {
    let port = burnacc_tests::processes::free_port_block(3);
    let mut launch = std::process::Command::new(env!("CARGO_BIN_EXE_launch"))
        .args([
            "--nproc-per-node",
            "2",
            "--master-port",
            &port.to_string(),
            "--",
        ])
        .arg(recipe)
        .arg("--quiet")
        .args(extra)
        .spawn()
        .unwrap();
    let status = burnacc_tests::processes::wait_bounded(
        &mut launch,
        std::time::Duration::from_secs(600),
        "launch",
    );
    assert!(status.success(), "launch: {status}");
}
