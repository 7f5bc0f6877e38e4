//! `[kernels] sgd = true` / `adam = true`: the optimizer's step runs as one multi-tensor update
//! (Flex's fused loop on the CPU, the CubeCL kernels on wgpu), training tracks the
//! per-parameter optimizer within f32 rounding, and the fused launch counters prove which path
//! ran. Keys the recipe cannot honour are errors that name them.

use crate::common::{losses, rel, tiny_recipe};
use burnacc_kernels::optim::{
    multi_tensor_adam_launches, multi_tensor_buffer_copies, multi_tensor_sgd_launches,
};
use burnacc_train::recipe::{DeviceSpec, Mode};
use burnacc_train::recipe::{Recipe, parse_recipe};
use burnacc_train::stack::Stack;
use burnacc_train::trainer::{RunOptions, run_checked};
use std::path::Path;

const STEPS: usize = 4;

fn run(root: &Path, stack: Stack, sets: &[&str]) -> Vec<f64> {
    let recipe = tiny_recipe(root, STEPS, sets);
    let options = RunOptions {
        quiet: true,
        ..Default::default()
    };
    losses(&run_checked(&recipe, Path::new("tiny.toml"), stack, &options).unwrap())
}

/// Losses of the fused run against the plain one: the first is computed before any step, the
/// others after fused steps, and must agree to f32 rounding of the update.
fn assert_tracks(fused: &[f64], plain: &[f64]) {
    assert_eq!(fused.len(), STEPS);
    assert_eq!(fused[0], plain[0], "the first loss precedes any step");
    for (step, (f, p)) in fused.iter().zip(plain).enumerate() {
        assert!(
            rel(*f, *p) < 1e-4,
            "step {step}: fused loss {f} vs per-parameter {p}"
        );
    }
    assert!(
        fused[STEPS - 1] < fused[0],
        "the fused run did not learn: {fused:?}"
    );
}

#[test]
fn fused_sgd_tracks_the_per_parameter_step_on_the_cpu() {
    let dir = tempfile::tempdir().unwrap();
    let acc = [
        "backend.mode=\"acc\"",
        "backend.device=\"cpu\"",
        "optim.momentum=0.9",
    ];
    let plain = run(dir.path(), Stack::new(Mode::Acc, DeviceSpec::Cpu), &acc);
    let before = multi_tensor_sgd_launches();
    let copies = multi_tensor_buffer_copies();
    let fused = run(
        dir.path(),
        Stack::new(Mode::Acc, DeviceSpec::Cpu),
        &[&acc[..], &["kernels.sgd=true"]].concat(),
    );
    // One fused loop per step (all parameters are f32).
    assert!(
        multi_tensor_sgd_launches() - before >= STEPS as u64,
        "the fused SGD did not run"
    );
    // The optimizer holds the only reference to each parameter and momentum buffer.
    assert_eq!(
        multi_tensor_buffer_copies(),
        copies,
        "the fused SGD copied parameters or state instead of updating them in place"
    );
    assert_tracks(&fused, &plain);
}

#[test]
fn fused_adamw_tracks_the_per_parameter_step_on_wgpu() {
    let dir = tempfile::tempdir().unwrap();
    let acc = [
        "backend.mode=\"acc\"",
        "backend.device=\"wgpu\"",
        "optim.name=\"adamw\"",
        "optim.lr=0.003",
    ];
    let plain = run(dir.path(), Stack::new(Mode::Acc, DeviceSpec::Wgpu), &acc);
    let before = multi_tensor_adam_launches();
    let fused = run(
        dir.path(),
        Stack::new(Mode::Acc, DeviceSpec::Wgpu),
        &[&acc[..], &["kernels.adam=true"]].concat(),
    );
    assert!(
        multi_tensor_adam_launches() - before >= STEPS as u64,
        "the fused AdamW did not launch"
    );
    assert_tracks(&fused, &plain);
}

fn parse(sets: &[&str]) -> Result<Recipe, String> {
    let text = "[model]\nname = \"resnet18\"\n";
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    parse_recipe(text, Path::new("k.toml"), &sets).map_err(|e| e.to_string())
}

#[test]
fn optimizer_keys_need_their_optimizer_and_mode_acc() {
    let err = parse(&[
        "backend.mode=\"acc\"",
        "optim.name=\"sgd\"",
        "kernels.adam=true",
    ])
    .unwrap_err();
    assert!(err.contains("kernels.adam") && err.contains("sgd"), "{err}");
    let err = parse(&[
        "backend.mode=\"acc\"",
        "optim.name=\"adamw\"",
        "kernels.sgd=true",
    ])
    .unwrap_err();
    assert!(
        err.contains("kernels.sgd") && err.contains("adamw"),
        "{err}"
    );
    let err = parse(&[
        "backend.mode=\"eager\"",
        "optim.name=\"sgd\"",
        "kernels.sgd=true",
    ])
    .unwrap_err();
    assert!(
        err.contains("kernels.sgd") && err.contains("mode acc"),
        "{err}"
    );
    parse(&[
        "backend.mode=\"acc\"",
        "optim.name=\"adam\"",
        "kernels.adam=true",
    ])
    .unwrap();
}

#[test]
fn kernels_the_model_never_calls_are_reported_at_the_end_of_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let recipe = tiny_recipe(
        dir.path(),
        2,
        &[
            "backend.mode=\"acc\"",
            "backend.device=\"cpu\"",
            "kernels.sgd=true",
            "kernels.layer_norm=true",
            "kernels.swin_fmha=true",
        ],
    );
    let options = RunOptions {
        quiet: true,
        ..Default::default()
    };
    let stack = Stack::new(Mode::Acc, DeviceSpec::Cpu);
    let summary = run_checked(&recipe, Path::new("tiny.toml"), stack, &options).unwrap();
    let unused: Vec<&str> = summary.unused_kernels.iter().map(|u| u.key).collect();
    // A ResNet has no LayerNorm and no window attention; its SGD steps took the fused route.
    assert_eq!(unused, ["kernels.layer_norm", "kernels.swin_fmha"]);
    let written = std::fs::read_to_string(summary.run_dir.join("summary.json")).unwrap();
    assert!(written.contains("kernels.swin_fmha"), "{written}");
}
