//! Tier 2: `train.on_nonfinite = "skip"` skips, on the device, the update of a step whose loss
//! is NaN or infinite — weights and optimizer state stay bit for bit as they were, the next
//! step is the step a run without the bad one takes — while `"stop"` (the default) applies it,
//! which is why that mode stops the run at the next logged step.

use burn::backend::{Autodiff, Flex};
use burn::nn::{Linear, LinearConfig};
use burn::tensor::{Int, Tensor, TensorData};
use burnacc_train::recipe::{Recipe, parse_recipe};
use burnacc_train::trainer::Stepper;
use std::path::Path;

type B = Autodiff<Flex>;

fn recipe(sets: &[&str]) -> Recipe {
    let text = "[model]\nname = \"resnet18\"\n[optim]\nname = \"adamw\"\nlr = 0.01\n";
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    parse_recipe(text, Path::new("nonfinite.toml"), &sets).unwrap()
}

fn batch(step: usize) -> (Tensor<B, 2>, Tensor<B, 1, Int>) {
    let device = Default::default();
    let x: Vec<f32> = (0..24)
        .map(|i| ((i + 7 * step) as f32 * 0.37).sin())
        .collect();
    let labels: Vec<i64> = (0..6).map(|i| ((i + step) % 3) as i64).collect();
    (
        Tensor::from_data(TensorData::new(x, [6, 4]), &device),
        Tensor::from_data(TensorData::new(labels, [6]), &device),
    )
}

/// Steps `steps` in order; a step whose entry is `true` multiplies the logits by NaN.
fn train(recipe: &Recipe, poisoned: &[bool]) -> (Linear<B>, Vec<Option<f32>>) {
    let device = Default::default();
    let mut model: Linear<B> = LinearConfig::new(4, 3).init(&device);
    let mut stepper = Stepper::<B, Linear<B>>::new(recipe, &device).unwrap();
    let mut flags = Vec::new();
    for (step, &poison) in poisoned.iter().enumerate() {
        let (x, labels) = batch(step);
        let (next, out) = stepper
            .step(model, 0.01, |m, _tape| {
                let logits = m.forward(x);
                let logits = if poison {
                    logits.mul_scalar(f32::NAN)
                } else {
                    logits
                };
                (logits, labels)
            })
            .unwrap();
        model = next;
        flags.push(
            out.nonfinite_loss
                .map(|f| f.into_data().to_vec::<f32>().unwrap()[0]),
        );
    }
    (model, flags)
}

fn weight_bits(model: &Linear<B>) -> Vec<u32> {
    let mut bits: Vec<u32> = model
        .weight
        .val()
        .into_data()
        .to_vec::<f32>()
        .unwrap()
        .into_iter()
        .map(f32::to_bits)
        .collect();
    let bias = model.bias.as_ref().unwrap().val().into_data();
    bits.extend(bias.to_vec::<f32>().unwrap().into_iter().map(f32::to_bits));
    bits
}

#[test]
fn a_skipped_nonfinite_step_leaves_the_run_as_if_it_never_happened() {
    let skip = recipe(&["train.on_nonfinite=\"skip\""]);
    // The weights are initialised from the device's generator: seed it alike for each run.
    let seeded = |poisoned: &[bool]| {
        <Flex as burn::tensor::backend::Backend>::seed(&Default::default(), 7);
        train(&skip, poisoned)
    };
    let (with_bad, flags) = seeded(&[false, false, true, false]);
    assert_eq!(flags, [Some(0.0), Some(0.0), Some(1.0), Some(0.0)]);
    // Steps 0, 1, 3 without step 2 at all: the same batches (each batch is its step's).
    let (control, _) = {
        <Flex as burn::tensor::backend::Backend>::seed(&Default::default(), 7);
        let device = Default::default();
        let mut model: Linear<B> = LinearConfig::new(4, 3).init(&device);
        let mut stepper = Stepper::<B, Linear<B>>::new(&skip, &device).unwrap();
        for step in [0, 1, 3] {
            let (x, labels) = batch(step);
            model = stepper
                .step(model, 0.01, |m, _| (m.forward(x), labels))
                .unwrap()
                .0;
        }
        (model, ())
    };
    let bits = weight_bits(&with_bad);
    assert!(
        bits.iter().all(|b| f32::from_bits(*b).is_finite()),
        "the NaN step reached the weights"
    );
    // AdamW's bias corrections count steps taken: the skipped step must not count.
    assert_eq!(
        bits,
        weight_bits(&control),
        "skipping is not the same as never stepping"
    );
}

#[test]
fn the_default_stop_mode_applies_the_step_and_the_loop_stops_on_its_loss() {
    let stop = recipe(&[]);
    let (model, flags) = train(&stop, &[false, true]);
    assert_eq!(flags, [None, None], "stop mode adds nothing to a step");
    assert!(
        weight_bits(&model)
            .iter()
            .any(|b| !f32::from_bits(*b).is_finite()),
        "without skipping the NaN gradients are applied"
    );
}
