//! What the training tests share: a tiny recipe (ResNet-18 of width 8 on 16 px mock images)
//! and readers of a run's log.

#![allow(dead_code)] // each test file uses part of it

use burnacc_train::recipe::{Recipe, parse_recipe};
use burnacc_train::trainer::RunSummary;
use std::path::Path;

/// A ResNet-18 of width 8 on 32 generated 16 px images of 4 learnable classes (written under
/// `root/mock`), SGD with momentum, `steps` steps logged every step, runs under `root/runs`.
/// `sets` are `--set` overrides.
pub fn tiny_recipe(root: &Path, steps: usize, sets: &[&str]) -> Recipe {
    let text = format!(
        r#"
        [model]
        name = "resnet18"
        base_width = 8
        small_input_stem = true
        {data_and_train}        [optim]
        name = "sgd"
        lr = 0.05
        schedule = "constant"
        "#,
        data_and_train = mock_data_and_train(root, steps),
    );
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    parse_recipe(&text, Path::new("tiny.toml"), &sets).unwrap()
}

/// A Swin of width 16 (patch 2, window 4, 2 stages of 2 blocks, 1 and 2 heads) on 32 generated
/// 16 px images of 4 learnable classes (written under `root/mock`), AdamW, `steps` steps logged
/// every step, runs under `root/runs`. `sets` are `--set` overrides.
pub fn tiny_swin(root: &Path, steps: usize, sets: &[&str]) -> Recipe {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    parse_recipe(
        &tiny_swin_text(root, steps),
        Path::new("tiny_swin.toml"),
        &sets,
    )
    .unwrap()
}

/// The text of [`tiny_swin`]'s recipe.
pub fn tiny_swin_text(root: &Path, steps: usize) -> String {
    format!(
        r#"
        [model]
        name = "swin-t"
        patch_size = 2
        embed_dim = 16
        depths = [2, 2]
        num_heads = [1, 2]
        window_size = 4
        drop_path_rate = 0.0
        {data_and_train}
        save_model = false
        [optim]
        name = "adamw"
        lr = 3e-3
        weight_decay = 0.05
        schedule = "constant"
        "#,
        data_and_train = mock_data_and_train(root, steps),
    )
}

/// The `[data]` (32 generated 16 px images of 4 classes under `root/mock`, a quarter held out)
/// and `[train]` (batch 8, `steps` steps logged every step, runs under `root/runs`) sections
/// of the tiny recipes.
fn mock_data_and_train(root: &Path, steps: usize) -> String {
    format!(
        r#"
        [data]
        dataset = "mock-imagenet"
        path = {data:?}
        image_size = 16
        resize = 18
        val_fraction = 0.25
        workers = 1
        [data.mock]
        classes = 4
        images_per_class = 8
        image_size = 20
        [train]
        batch_size = 8
        max_steps = {steps}
        log_every = 1
        run_dir = {runs:?}
        "#,
        data = root.join("mock"),
        runs = root.join("runs"),
    )
}

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
