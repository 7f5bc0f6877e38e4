//! Tier 3: gradient accumulation. `train.accumulate = 2` at batch 4 trains like one step on the
//! joined batch of 8 (the same samples: an epoch's order does not depend on the batch size),
//! within f32 rounding of the split reductions, on a Swin (layer norm: no statistic over the
//! batch), with AdamW; under bf16 autocast with the loss scaler within the training tolerance.

use burnacc_tests::tolerance::{
    OpKind, Pass, Precision, TrainingStep, tolerance, training_loss_tolerance,
};
use burnacc_train::recipe::{DeviceSpec, Mode, parse_recipe};
use burnacc_train::stack::Stack;
use burnacc_train::trainer::{RunOptions, RunSummary, run_checked};
use std::path::Path;

use crate::common::{losses, tiny_swin_text};

const STEPS: usize = 5;

fn run(root: &Path, stack: Stack, sets: &[&str]) -> RunSummary {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let recipe = parse_recipe(
        &tiny_swin_text(root, STEPS),
        Path::new("tiny_swin.toml"),
        &sets,
    )
    .unwrap();
    let options = RunOptions {
        quiet: true,
        ..Default::default()
    };
    run_checked(&recipe, Path::new("tiny_swin.toml"), stack, &options).unwrap()
}

/// Runs the joined batch of 8 and 2 micro-batches of 4 with `sets`: their losses, the
/// accumulated run's summary and its first log record.
fn joined_and_accumulated(
    stack: Stack,
    sets: &[&str],
) -> (Vec<f64>, Vec<f64>, RunSummary, serde_json::Value) {
    let root = tempfile::tempdir().unwrap();
    let mut joined_sets = vec!["train.batch_size=8"];
    joined_sets.extend_from_slice(sets);
    let joined = losses(&run(root.path(), stack, &joined_sets));
    let mut accumulated_sets = vec!["train.batch_size=4", "train.accumulate=2"];
    accumulated_sets.extend_from_slice(sets);
    let summary = run(root.path(), stack, &accumulated_sets);
    let first = crate::common::records(&summary)[0].clone();
    (joined, losses(&summary), summary, first)
}

#[test]
fn two_micro_batches_train_like_the_joined_batch_in_f32() {
    for stack in [
        Stack::new(Mode::Eager, DeviceSpec::Cpu),
        Stack::new(Mode::Acc, DeviceSpec::Cpu),
    ] {
        let (joined, accumulated, _, first) = joined_and_accumulated(stack, &[]);
        assert_eq!(
            accumulated.len(),
            STEPS,
            "{stack}: one line per optimizer step"
        );
        assert_eq!(first["step"], 1, "{stack}: steps count optimizer steps");
        // The split changes only the order of the batch reductions (loss mean, weight
        // gradients), and AdamW carries the difference along the steps.
        let tolerance = tolerance(OpKind::Reduction, Precision::F32, Pass::Backward);
        for (step, (a, j)) in accumulated.iter().zip(&joined).enumerate() {
            assert!(
                tolerance.excess(*a, *j) <= 1.0,
                "{stack} step {}: accumulated {a} vs joined {j} ({tolerance:?})\naccumulated: \
                 {accumulated:?}\njoined: {joined:?}",
                step + 1
            );
        }
        // The comparison can fail: batches of 4 without accumulation (half the samples per
        // step) leave the tolerance.
        let root = tempfile::tempdir().unwrap();
        let half = losses(&run(root.path(), stack, &["train.batch_size=4"]));
        assert!(
            half.iter()
                .zip(&joined)
                .any(|(h, j)| tolerance.excess(*h, *j) > 1.0),
            "{stack}: batch 4 alone is within the tolerance too: {half:?} vs {joined:?}"
        );
    }
}

#[test]
fn two_micro_batches_under_the_loss_scaler_train_like_the_joined_batch() {
    let stack = Stack::new(Mode::Acc, DeviceSpec::Cpu);
    let amp = [
        "amp.enabled=true",
        "amp.dtype=\"bf16\"",
        "amp.grad_scaler=true",
        "amp.growth_interval=2",
    ];
    let (joined, accumulated, summary, _) = joined_and_accumulated(stack, &amp);
    let compared = [
        (TrainingStep::First, 0),
        (TrainingStep::Second, 1),
        (TrainingStep::Last, STEPS - 1),
    ];
    for (step, index) in compared {
        let tolerance = training_loss_tolerance(Precision::BF16, step);
        let (a, j) = (accumulated[index], joined[index]);
        assert!(
            tolerance.excess(a, j) <= 1.0,
            "{step:?} step: accumulated {a} vs joined {j} ({tolerance:?})"
        );
    }
    // The scale grew every 2 clean optimizer steps, not every 2 micro-batches.
    let scale = summary
        .outcome
        .stats
        .final_loss_scale
        .expect("loss scaling on");
    let skipped = summary
        .outcome
        .stats
        .skipped_steps
        .expect("loss scaling on");
    let grown = (STEPS as u64 - skipped) / 2;
    assert!(
        skipped == 0,
        "no bf16 step overflows here ({skipped} skipped)"
    );
    assert_eq!(
        scale,
        65536.0 * 2f64.powi(grown as i32),
        "scale after {STEPS} steps"
    );
}

/// Two replicas (`[ddp] devices`, one thread each) of 2 micro-batches of 2 samples: the same 8
/// samples per optimizer step as one device on the joined batch, the gradients all-reduced
/// once per optimizer step, after both micro-batches.
#[test]
fn accumulation_under_data_parallelism_trains_like_the_joined_batch() {
    let root = tempfile::tempdir().unwrap();
    let stack = Stack::new(Mode::Acc, DeviceSpec::Cpu);
    let joined = losses(&run(root.path(), stack, &["train.batch_size=8"]));
    let text = tiny_swin_text(root.path(), STEPS)
        .replace("batch_size = 8", "batch_size = 2\n        accumulate = 2")
        .replace("runs\"", "runs-ddp\"");
    let recipe = root.path().join("ddp.toml");
    let sections = "[backend]\nmode = \"acc\"\ndevice = \"cpu\"\n[ddp]\ndevices = [\"cpu\", \"cpu\"]\ntimeout_secs = 60\n";
    std::fs::write(&recipe, format!("{text}\n{sections}")).unwrap();
    let options = RunOptions {
        quiet: true,
        ..Default::default()
    };
    let summary = burnacc_train::trainer::run_recipe(&recipe, &options).unwrap();
    let replicated = losses(&summary);
    let tolerance = tolerance(OpKind::Reduction, Precision::F32, Pass::Backward);
    for (step, (a, j)) in replicated.iter().zip(&joined).enumerate() {
        assert!(
            tolerance.excess(*a, *j) <= 1.0,
            "step {}: 2 replicas × 2 micro-batches {a} vs joined {j}",
            step + 1
        );
    }
}
