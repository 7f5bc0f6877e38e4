//! Tier 3: training with `[amp]` on. bf16 autocast on the CPU (Flex) and f16 autocast with
//! loss scaling on wgpu train a small ResNet and track the f32 run within the tolerance
//! table's training row (first, second and last step); a training step never reads back from
//! the device; a dtype the device lacks is a clear error before any work.

use crate::common::{losses, records, tiny_recipe};
use burnacc_backend::counters;
use burnacc_tests::tolerance::{Precision, TrainingStep, training_loss_tolerance};
use burnacc_train::precision::{check_amp_dtype, supported_float_dtypes};
use burnacc_train::recipe::{DeviceSpec, Mode};
use burnacc_train::stack::Stack;
use burnacc_train::trainer::{RunOptions, RunSummary, run_checked};
use std::path::Path;

const STEPS: usize = 8;

fn quiet() -> RunOptions {
    RunOptions {
        quiet: true,
        ..Default::default()
    }
}

fn run(root: &Path, stack: Stack, steps: usize, sets: &[&str]) -> RunSummary {
    let recipe = tiny_recipe(root, steps, sets);
    check_amp_dtype(&recipe, Path::new("tiny.toml"), stack).unwrap();
    run_checked(&recipe, Path::new("tiny.toml"), stack, &quiet()).unwrap()
}

/// Wider than the default tiny recipe, with batches of 16 and a gentler learning rate: batch
/// norm over more samples makes the runs less sensitive to rounding (see the training row).
const TRACKING: [&str; 4] = [
    "model.base_width=16",
    "train.batch_size=16",
    "data.mock.images_per_class=16",
    "optim.lr=0.01",
];

/// Runs `stack` in f32 and with autocast in `dtype`, and checks that the autocast run learns
/// and stays within the training tolerance of the f32 run. Runs go under `root`.
fn tracks_f32(root: &Path, stack: Stack, dtype: &str, precision: Precision) -> RunSummary {
    let f32_run = losses(&run(root, stack, STEPS, &TRACKING));
    let dtype_set = format!("amp.dtype=\"{dtype}\"");
    let mut sets = TRACKING.to_vec();
    sets.extend(["amp.enabled=true", dtype_set.as_str()]);
    let amp = run(root, stack, STEPS, &sets);
    let amp_run = losses(&amp);
    assert!(
        amp_run.iter().all(|l| l.is_finite()),
        "{stack} {dtype}: {amp_run:?}"
    );
    assert!(
        amp_run[STEPS - 1] < 0.7 * amp_run[0],
        "{stack} {dtype}: loss did not go down: {amp_run:?}"
    );
    let compared = [
        (TrainingStep::First, 0),
        (TrainingStep::Second, 1),
        (TrainingStep::Last, STEPS - 1),
    ];
    for (step, index) in compared {
        let tolerance = training_loss_tolerance(precision, step);
        let (got, expected) = (amp_run[index], f32_run[index]);
        assert!(
            tolerance.excess(got, expected) <= 1.0,
            "{stack} {dtype} {step:?} step: loss {got} vs f32 {expected} ({tolerance:?})\n\
             {dtype}: {amp_run:?}\nf32: {f32_run:?}"
        );
    }
    // Autocast changed the computation: the runs are not the same run twice.
    assert_ne!(amp_run, f32_run, "{stack} {dtype}: autocast had no effect");
    amp
}

#[test]
fn bf16_autocast_on_cpu_tracks_f32() {
    let root = tempfile::tempdir().unwrap();
    let amp = tracks_f32(
        root.path(),
        Stack::new(Mode::Acc, DeviceSpec::Cpu),
        "bf16",
        Precision::BF16,
    );
    // bf16 has f32's range: no loss scaling by default.
    assert!(records(&amp).iter().all(|r| r["loss_scale"].is_null()));
}

#[test]
fn f16_autocast_with_loss_scaling_on_wgpu_tracks_f32() {
    let root = tempfile::tempdir().unwrap();
    let amp = tracks_f32(
        root.path(),
        Stack::new(Mode::Acc, DeviceSpec::Wgpu),
        "f16",
        Precision::F16,
    );
    // f16 turns loss scaling on; the default scale 2^16 overflows f16 (max 65504) in the
    // backward pass of the first step, which is skipped and halves the scale, as in PyTorch.
    let scales: Vec<f64> = records(&amp)
        .iter()
        .map(|r| r["loss_scale"].as_f64().expect("f16 logs its loss scale"))
        .collect();
    let skipped = amp
        .outcome
        .stats
        .skipped_steps
        .expect("f16 counts skipped steps");
    let expected = 65536.0 * 0.5f64.powi(skipped as i32);
    assert_eq!(
        scales[STEPS - 1],
        expected,
        "scales {scales:?}, {skipped} skipped"
    );
    assert!(
        skipped < 3,
        "{skipped} of {STEPS} steps skipped: {scales:?}"
    );
}

#[test]
fn a_training_step_never_reads_from_the_device() {
    let root = tempfile::tempdir().unwrap();
    let before = counters::snapshot();
    // bf16 autocast with loss scaling forced on: every part of the step (autocast, scaling,
    // unscale and inf check, masked SGD with momentum, scale update) runs, over 20 steps.
    let summary = run(
        root.path(),
        Stack::new(Mode::Acc, DeviceSpec::Cpu),
        20,
        &[
            "amp.enabled=true",
            "amp.grad_scaler=true",
            "train.log_every=10",
            "train.eval=false",
            "train.save_model=false",
        ],
    );
    let logged = records(&summary);
    let steps: Vec<u64> = logged.iter().map(|r| r["step"].as_u64().unwrap()).collect();
    assert_eq!(steps, [1, 10, 20]);
    for record in &logged {
        assert_eq!(
            record["host_reads"].as_u64(),
            Some(0),
            "host reads before the logged step: {record}"
        );
    }
    // The counter sees reads: each logged step read its metrics in one transaction.
    let reads = counters::snapshot().since(&before).host_reads();
    assert!(reads >= 3, "{reads} host reads counted over the run");
    assert_eq!(summary.outcome.stats.skipped_steps, Some(0));
}

#[test]
fn an_unsupported_dtype_is_a_clear_error() {
    assert!(supported_float_dtypes(Stack::new(Mode::Acc, DeviceSpec::Cpu)).contains(&"bf16"));
    let wgpu = supported_float_dtypes(Stack::new(Mode::Acc, DeviceSpec::Wgpu));
    let missing = ["bf16", "f16"]
        .into_iter()
        .find(|d| !wgpu.contains(d))
        .expect("lavapipe lacks bf16");
    let root = tempfile::tempdir().unwrap();
    let recipe = tiny_recipe(
        root.path(),
        1,
        &["amp.enabled=true", &format!("amp.dtype=\"{missing}\"")],
    );
    let error = check_amp_dtype(
        &recipe,
        Path::new("tiny.toml"),
        Stack::new(Mode::Acc, DeviceSpec::Wgpu),
    )
    .unwrap_err()
    .to_string();
    assert!(error.contains("tiny.toml"), "{error}");
    assert!(error.contains("`amp.dtype`"), "{error}");
    assert!(
        error.contains(&format!("{missing} is not supported by mode acc on wgpu")),
        "{error}"
    );
    assert!(
        error.contains(&format!("supports {}", wgpu.join(", "))),
        "{error}"
    );
}
