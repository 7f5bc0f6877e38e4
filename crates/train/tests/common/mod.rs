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
        [optim]
        name = "sgd"
        lr = 0.05
        schedule = "constant"
        "#,
        data = root.join("mock"),
        runs = root.join("runs"),
    );
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    parse_recipe(&text, Path::new("tiny.toml"), &sets).unwrap()
}

/// The records of a run's `log.jsonl`.
pub fn records(summary: &RunSummary) -> Vec<serde_json::Value> {
    let log = std::fs::read_to_string(summary.run_dir.join("log.jsonl")).unwrap();
    log.lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// The logged losses of a run.
pub fn losses(summary: &RunSummary) -> Vec<f64> {
    records(summary)
        .iter()
        .map(|r| r["loss"].as_f64().unwrap())
        .collect()
}

/// `|a − b| / |b|`.
pub fn rel(a: f64, b: f64) -> f64 {
    (a - b).abs() / b.abs().max(1e-12)
}
