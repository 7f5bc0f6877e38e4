//! Tier 3: evaluation. The top-1 and top-5 accuracy and the mean cross-entropy of `evaluate`
//! equal a host computation in f64 over the same logits; a capped evaluation reads a sample
//! of the whole held-out split, not its first (class-sorted) files; `train.eval_every` logs
//! the held-out metrics at its steps and after the last, which is the run's evaluation.

use burn::backend::Flex;
use burnacc_train::recipe::{DeviceSpec, Mode};
use burnacc_train::stack::Stack;
use burnacc_train::trainer::{
    BatchSource, Classify, RunOptions, Upload, build_image_data, evaluate, init_model,
    model_config, run_checked,
};
use std::path::Path;

use crate::common::{records, tiny_recipe};

/// 8 classes, so that top-5 is not every class.
const CLASSES: &str = "data.mock.classes=8";

#[test]
fn evaluate_matches_a_host_computation_of_top1_top5_and_the_loss() {
    let root = tempfile::tempdir().unwrap();
    // Batches of 3 over 16 held-out images: a partial last batch weighs what it holds.
    let recipe = tiny_recipe(root.path(), 1, &[CLASSES, "train.eval_batch_size=3"]);
    let data = build_image_data(&recipe).unwrap();
    let loader = data.eval.as_ref().unwrap();
    let device = Default::default();
    let config = model_config(&recipe, data.num_classes, data.channels);
    let model = init_model::<Flex>(&config, 7, &device).unwrap();
    let result = evaluate(&model, loader, None, &device).unwrap();

    let (mut samples, mut top1, mut top5, mut loss) = (0, 0, 0, 0.0f64);
    for batch in loader.batches(0) {
        let (logits, labels) = model.classify(Upload::<Flex>::upload(batch.unwrap(), &device));
        let [n, classes] = logits.dims();
        let logits: Vec<f32> = logits.into_data().to_vec().unwrap();
        let labels: Vec<i64> = labels.into_data().convert::<i64>().to_vec().unwrap();
        for (row, &label) in logits.chunks(classes).zip(&labels) {
            let label = label as usize;
            let above = row.iter().filter(|&&x| x > row[label]).count();
            top1 += usize::from(above == 0);
            top5 += usize::from(above < 5);
            let max = row.iter().fold(f64::MIN, |m, &x| m.max(f64::from(x)));
            let sum: f64 = row.iter().map(|&x| (f64::from(x) - max).exp()).sum();
            loss += max + sum.ln() - f64::from(row[label]);
        }
        samples += n;
    }
    assert_eq!(result.samples, samples);
    assert_eq!(result.correct, top1, "top-1");
    assert_eq!(result.top5_correct, top5, "top-5");
    assert!(
        top5 > top1 && top5 < samples,
        "top-5 is informative here: {top1} {top5} {samples}"
    );
    let expected = loss / samples as f64;
    assert!(
        (result.loss - expected).abs() <= 1e-5 * expected,
        "loss {} vs {expected}",
        result.loss
    );
}

#[test]
fn a_capped_evaluation_samples_the_whole_held_out_split() {
    let root = tempfile::tempdir().unwrap();
    let labels_of_first_batch = |sets: &[&str]| {
        let recipe = tiny_recipe(root.path(), 1, sets);
        let data = build_image_data(&recipe).unwrap();
        let batch = data.eval.unwrap().batches(0).next().unwrap().unwrap();
        batch.labels
    };
    let sets = [CLASSES, "train.eval_batch_size=4"];
    // The whole split in folder order: its first batch holds the first two classes.
    let ordered = labels_of_first_batch(&sets);
    assert_eq!(ordered, [0, 0, 1, 1], "the held-out split is class-sorted");
    let capped = labels_of_first_batch(&[
        CLASSES,
        "train.eval_batch_size=4",
        "train.eval_max_batches=1",
    ]);
    assert_ne!(capped, ordered, "a capped evaluation read the first files");
    let mut classes = capped.clone();
    classes.sort();
    classes.dedup();
    assert!(
        classes.len() >= 3,
        "a sample across the classes: {capped:?}"
    );
}

#[test]
fn eval_every_logs_held_out_metrics_and_the_last_is_the_runs_evaluation() {
    let root = tempfile::tempdir().unwrap();
    let recipe = tiny_recipe(
        root.path(),
        5,
        &[CLASSES, "train.eval_every=2", "train.log_every=10"],
    );
    let options = RunOptions {
        quiet: true,
        ..Default::default()
    };
    let summary = run_checked(
        &recipe,
        Path::new("eval.toml"),
        Stack::new(Mode::Eager, DeviceSpec::Cpu),
        &options,
    )
    .unwrap();
    let logged: Vec<(u64, Option<f64>)> = records(&summary)
        .iter()
        .map(|r| (r["step"].as_u64().unwrap(), r["val_accuracy"].as_f64()))
        .collect();
    let evaluated: Vec<u64> = logged
        .iter()
        .filter(|(_, v)| v.is_some())
        .map(|(s, _)| *s)
        .collect();
    assert_eq!(evaluated, [2, 4, 5], "evaluated at {logged:?}");
    let eval = summary.outcome.eval.expect("train.eval is on");
    assert_eq!(logged.last().unwrap().1, Some(eval.accuracy()));
    assert!(eval.loss.is_finite() && eval.top5_accuracy() >= eval.accuracy());
}
