//! Tier 3: `[checkpoint] mode = "blocks"` trains exactly as without checkpointing: the same
//! losses at every step (f32 and bf16 autocast, CPU), since the gradients are the same.

mod common;

use burnacc_train::stack::Stack;
use burnacc_train::trainer::{RunOptions, run_checked};
use common::{losses, rel, tiny_recipe};
use std::path::Path;

const STEPS: usize = 4;

/// The losses of a run and the number of blocks it checkpointed per step.
fn run(root: &Path, sets: &[&str]) -> (Vec<f64>, usize) {
    let recipe = tiny_recipe(root, STEPS, sets);
    let options = RunOptions {
        quiet: true,
        ..Default::default()
    };
    let summary = run_checked(&recipe, Path::new("tiny.toml"), Stack::CpuAcc, &options).unwrap();
    (losses(&summary), summary.outcome.stats.checkpointed_blocks)
}

#[test]
fn checkpointed_blocks_train_like_plain_blocks() {
    let root = tempfile::tempdir().unwrap();
    for amp in [&[][..], &["amp.enabled=true"][..]] {
        let (plain, none) = run(root.path(), amp);
        let (checkpointed, blocks) = run(root.path(), &[amp, &["checkpoint.mode=blocks"][..]].concat());
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
