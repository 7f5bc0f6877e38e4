//! Tier 3: runs whose loss stops being finite end with a message that names the step and says
//! what to try, and never write a checkpoint or a model holding NaN or infinite weights.

use burnacc_train::recipe::DeviceSpec;
use burnacc_train::recipe::Mode;
use burnacc_train::resume::{complete_checkpoints, non_finite_tensors};
use burnacc_train::stack::Stack;
use burnacc_train::trainer::{RunOptions, run_checked};
use std::path::Path;

use crate::common::tiny_recipe;

fn diverge(root: &Path, sets: &[&str]) -> String {
    let mut all = vec!["optim.lr=1e30", "train.eval=false"];
    all.extend_from_slice(sets);
    let recipe = tiny_recipe(root, 8, &all);
    let options = RunOptions {
        quiet: true,
        ..Default::default()
    };
    let stack = Stack::new(Mode::Eager, DeviceSpec::Cpu);
    let error = run_checked(&recipe, Path::new("diverge.toml"), stack, &options)
        .expect_err("a learning rate of 1e30 diverges");
    format!("{error:#}")
}

#[test]
fn a_diverged_run_stops_and_writes_no_nonfinite_checkpoint_or_model() {
    let root = tempfile::tempdir().unwrap();
    let message = diverge(root.path(), &["train.save_every=1", "train.keep_last=0"]);
    assert!(message.contains("diverged"), "{message}");
    assert!(message.contains("optim.lr"), "{message}");
    let run_dir = root.path().join("runs").join("run-1");
    assert!(
        !run_dir.join("model.mpk").exists(),
        "a diverged model was saved"
    );
    for (step, dir) in complete_checkpoints(&run_dir).unwrap() {
        let weights = std::fs::read(dir.join("model.safetensors")).unwrap();
        let bad = non_finite_tensors(&weights).unwrap();
        assert!(
            bad.is_empty(),
            "the checkpoint of step {step} holds non-finite {bad:?}"
        );
    }
}

#[test]
fn skipping_nonfinite_steps_stops_after_the_limit_of_consecutive_ones() {
    let root = tempfile::tempdir().unwrap();
    let message = diverge(
        root.path(),
        &[
            "train.on_nonfinite=\"skip\"",
            "train.nonfinite_limit=2",
            "train.save_model=false",
        ],
    );
    assert!(message.contains("consecutive steps"), "{message}");
    assert!(message.contains("`train.nonfinite_limit` = 2"), "{message}");
    let log = std::fs::read_to_string(root.path().join("runs/run-1/log.jsonl")).unwrap();
    let skipped: Vec<u64> = log
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["skipped_steps"]
                .as_u64()
                .unwrap()
        })
        .collect();
    assert!(
        skipped.last().is_some_and(|&s| s >= 2),
        "the skipped steps are counted in the log: {skipped:?}"
    );
}
