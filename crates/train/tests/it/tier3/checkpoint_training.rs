//! Tier 3: `[checkpoint] mode = "blocks"` trains exactly as without checkpointing: the same
//! losses at every step (f32 and bf16 autocast, CPU), since the gradients are the same.

use crate::common::{losses, rel, tiny_recipe};
use burnacc_train::recipe::{DeviceSpec, Mode};
use burnacc_train::stack::Stack;
use burnacc_train::trainer::{RunOptions, RunSummary, run_checked};
use std::path::Path;

const STEPS: usize = 4;

/// The losses of a run and the number of blocks it checkpointed per step.
fn run(root: &Path, sets: &[&str]) -> (Vec<f64>, usize) {
    let summary = run_summary(root, sets).unwrap();
    (losses(&summary), summary.outcome.stats.checkpointed_blocks)
}

fn run_summary(root: &Path, sets: &[&str]) -> anyhow::Result<RunSummary> {
    let recipe = tiny_recipe(root, STEPS, sets);
    let options = RunOptions {
        quiet: true,
        ..Default::default()
    };
    run_checked(
        &recipe,
        Path::new("tiny.toml"),
        Stack::new(Mode::Acc, DeviceSpec::Cpu),
        &options,
    )
}

/// Runs of this file one at a time.
static ALONE: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn checkpointed_blocks_train_like_plain_blocks() {
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    let root = tempfile::tempdir().unwrap();
    for amp in [&[][..], &["amp.enabled=true"][..]] {
        let (plain, none) = run(root.path(), amp);
        let (checkpointed, blocks) = run(
            root.path(),
            &[amp, &["checkpoint.mode=blocks"][..]].concat(),
        );
        // ResNet-18: 8 residual blocks.
        assert_eq!((none, blocks), (0, 8));
        for (step, (a, b)) in checkpointed.iter().zip(&plain).enumerate() {
            assert!(
                rel(*a, *b) < 1e-5,
                "amp {amp:?} step {}: {a} checkpointed vs {b} plain\n{checkpointed:?}\n{plain:?}",
                step + 1
            );
        }
    }
}

#[test]
fn auto_checkpoints_what_the_budget_needs_and_trains_like_plain_blocks() {
    // `auto` measures blocks on the process's heap: no other run of this file meanwhile.
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    let root = tempfile::tempdir().unwrap();
    let (plain, _) = run(root.path(), &[]);

    // A budget above what the blocks keep: nothing is checkpointed.
    let roomy = run_summary(
        root.path(),
        &["checkpoint.mode=auto", "checkpoint.budget=1GiB"],
    )
    .unwrap();
    let chosen = roomy.outcome.stats.auto_checkpoint.clone().unwrap();
    assert_eq!(chosen.blocks, 8, "ResNet-18: 8 residual blocks");
    assert!(chosen.checkpointed.is_empty(), "{chosen:?}");
    assert_eq!(roomy.outcome.stats.checkpointed_blocks, 0);
    assert!(chosen.kept_without > 0);

    // A quarter of the way from the least any plan keeps to what the blocks keep without
    // checkpointing (the next run measures again, on a heap other threads share): some
    // blocks are checkpointed, the planned activations fit, and training is unchanged.
    assert!(chosen.least_kept < chosen.kept_without, "{chosen:?}");
    let budget = format!(
        "checkpoint.budget={}",
        chosen.least_kept + (chosen.kept_without - chosen.least_kept) / 4
    );
    let tight = run_summary(root.path(), &["checkpoint.mode=auto", &budget]).unwrap();
    let chosen = tight.outcome.stats.auto_checkpoint.clone().unwrap();
    assert!(!chosen.checkpointed.is_empty(), "{chosen:?}");
    assert!(chosen.kept_with <= chosen.budget, "{chosen:?}");
    assert_eq!(
        tight.outcome.stats.checkpointed_blocks,
        chosen.checkpointed.len()
    );
    for (step, (a, b)) in losses(&tight).iter().zip(&plain).enumerate() {
        assert!(
            rel(*a, *b) < 1e-5,
            "step {}: {a} auto vs {b} plain",
            step + 1
        );
    }

    // One byte cannot hold any plan: the error names the key, and the refused run leaves no
    // run folder behind (the plan needs the first batch, so the folder existed meanwhile).
    let runs = root.path().join("runs");
    let folders = |runs: &std::path::Path| std::fs::read_dir(runs).unwrap().count();
    let before = folders(&runs);
    let err = run_summary(
        root.path(),
        &["checkpoint.mode=auto", "checkpoint.budget=1"],
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("checkpoint.budget"), "{err}");
    assert_eq!(folders(&runs), before, "the refused run left its folder");
}
