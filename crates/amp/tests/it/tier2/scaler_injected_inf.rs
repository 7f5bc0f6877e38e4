//! Dynamic loss scaling with an injected overflow, against an unscaled control run, after
//! PyTorch's `test_grad_scaling_*` tests (`_run_scaling_case`): the same model, data and
//! optimizer train side by side, one run through `GradScaler` (scale → backward → unscale →
//! step with `found_inf` → update), the other with plain backward and step. At step `K` the
//! scaled run gets an inf, either written into a gradient (as PyTorch's test fills
//! `weight.grad` with inf) or multiplied into the loss; the control run skips step `K` by not
//! stepping.
//!
//! Checked: `found_inf` is 1 at step `K` only; the scale after every step and the final scale
//! and growth tracker equal values worked out by hand (`init * growth^growths *
//! backoff^skips`); the final parameters equal the control's (within 1e-6: the scales are
//! powers of two, so scaling and unscaling are exact); and the skip mattered (a control that
//! does step at `K` ends elsewhere).

use crate::common::*;
use burn::tensor::Tensor;
use burn::tensor::backend::AutodiffBackend;
use burnacc_amp::optim::{AdamConfig, SgdConfig, SyncFreeOptimizer};
use burnacc_amp::scaler::{GradScaler, GradScalerConfig, GradScalerState};

/// Where the inf enters the scaled run at the skipped step.
#[derive(Clone, Copy, Debug)]
enum Inject {
    /// The gradient of `w2` is replaced by a tensor of infs after backward.
    Gradient,
    /// The loss is multiplied by an inf before scaling.
    Loss,
}

/// A scenario: the scaler config, number of steps, the skipped step, and the expected
/// trajectory worked out by hand.
struct Case {
    config: GradScalerConfig,
    steps: usize,
    skip: usize,
    /// The scale after each step's `update`.
    scales: &'static [f32],
    final_state: GradScalerState,
}

/// init 2^8, growth_interval 3, 10 steps, skip at step 4. Tracker after each update:
/// 1 2 0(grow) 1 0(backoff) 1 2 0(grow) 1 2, so the scale goes
/// 256 256 512 512 256 256 256 512 512 512 and ends at 2^8 * 2^2 * 0.5^1 = 512, tracker 2.
fn interval_3() -> Case {
    Case {
        config: GradScalerConfig {
            init_scale: 256.0,
            growth_interval: 3,
            ..GradScalerConfig::default()
        },
        steps: 10,
        skip: 4,
        scales: &[
            256.0, 256.0, 512.0, 512.0, 256.0, 256.0, 256.0, 512.0, 512.0, 512.0,
        ],
        final_state: GradScalerState {
            scale: 256.0 * 4.0 * 0.5,
            growth_tracker: 2,
        },
    }
}

/// PyTorch's own case: init 128, growth_interval 1, 8 steps, skip at step 1: every clean
/// step grows, so 128 * 2^7 * 0.5^1 = 8192, tracker 0.
fn interval_1() -> Case {
    Case {
        config: GradScalerConfig {
            init_scale: 128.0,
            growth_interval: 1,
            ..GradScalerConfig::default()
        },
        steps: 8,
        skip: 1,
        scales: &[256.0, 128.0, 256.0, 512.0, 1024.0, 2048.0, 4096.0, 8192.0],
        final_state: GradScalerState {
            scale: 128.0 * 128.0 * 0.5,
            growth_tracker: 0,
        },
    }
}

/// The scaled run: final model, the scaler's final state, the scale after each update and
/// the found-inf flag of each step.
fn scaled_run<B, O>(
    mut optim: O,
    lr: f64,
    case: &Case,
    inject: Inject,
) -> (Mlp<B>, GradScalerState, Vec<f32>, Vec<f32>)
where
    B: AutodiffBackend,
    O: SyncFreeOptimizer<Mlp<B>, B>,
{
    let device = device::<B>();
    let mut model = Mlp::<B>::new(&device);
    let mut scaler = GradScaler::<B>::new(case.config, &device).unwrap();
    let (mut scales, mut found) = (Vec::new(), Vec::new());
    for step in 0..case.steps {
        let mut loss = loss(&model, step, &device);
        if step == case.skip && matches!(inject, Inject::Loss) {
            loss = loss * Tensor::<B, 1>::from_floats([f32::INFINITY], &device);
        }
        let scaled = scaler.scale(loss).unwrap();
        let mut grads = loss_grads(scaled, &model);
        if step == case.skip && matches!(inject, Inject::Gradient) {
            let inf = Tensor::<Inner<B>, 2>::full([HIDDEN, OUT], f32::INFINITY, &device);
            grads.register(model.w2.id, inf);
        }
        let grads = scaler.unscale(&model, grads).unwrap();
        let found_inf = scaler.found_inf().expect("found_inf after unscale");
        found.push(host(&found_inf)[0]);
        model = optim.step(lr, model, grads, Some(&found_inf));
        scaler.update().unwrap();
        scales.push(scaler.state().scale);
    }
    (model, scaler.state(), scales, found)
}

/// The unscaled control run, not stepping at `skip`.
fn control_run<B, O>(mut optim: O, lr: f64, steps: usize, skip: Option<usize>) -> Mlp<B>
where
    B: AutodiffBackend,
    O: SyncFreeOptimizer<Mlp<B>, B>,
{
    let device = device::<B>();
    let mut model = Mlp::<B>::new(&device);
    for step in 0..steps {
        let grads = loss_grads(loss(&model, step, &device), &model);
        if Some(step) != skip {
            model = optim.step(lr, model, grads, None);
        }
    }
    model
}

fn check<B, O>(make: impl Fn() -> O, lr: f64, case: &Case, inject: Inject, name: &str)
where
    B: AutodiffBackend,
    O: SyncFreeOptimizer<Mlp<B>, B>,
{
    let name = format!("{name}, {inject:?}, skip at {}", case.skip);
    let (scaled, state, scales, found) = scaled_run::<B, O>(make(), lr, case, inject);

    let mut expected_found = vec![0.0; case.steps];
    expected_found[case.skip] = 1.0;
    assert_eq!(found, expected_found, "{name}: found_inf per step");
    assert_eq!(scales, case.scales, "{name}: scale after each update");
    assert_eq!(state, case.final_state, "{name}: final scaler state");

    let control = control_run::<B, O>(make(), lr, case.steps, Some(case.skip));
    for (k, (s, c)) in params(&scaled).iter().zip(params(&control)).enumerate() {
        assert_close_f32(
            s,
            &c,
            1e-6,
            1e-7,
            &format!("{name}: param {k} against the control"),
        );
    }

    let init = params(&Mlp::<B>::new(&device::<B>()));
    let stepped_at_skip = control_run::<B, O>(make(), lr, case.steps, None);
    for (k, ((s, i), t)) in params(&scaled)
        .iter()
        .zip(&init)
        .zip(params(&stepped_at_skip))
        .enumerate()
    {
        let moved = s
            .iter()
            .zip(i)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f32::max);
        assert!(moved > 1e-3, "{name}: param {k} hardly trained ({moved})");
        let apart = s
            .iter()
            .zip(&t)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f32::max);
        assert!(
            apart > 1e-5,
            "{name}: param {k}: skipping step {} made no difference",
            case.skip
        );
    }
}

fn sgd() -> SgdConfig {
    SgdConfig {
        momentum: 0.9,
        dampening: 0.0,
        weight_decay: 1e-3,
        nesterov: false,
    }
}

fn all<B: AutodiffBackend>(backend: &str) {
    for case in [interval_3(), interval_1()] {
        for inject in [Inject::Gradient, Inject::Loss] {
            check::<B, _>(
                || sgd().init::<B>().unwrap(),
                0.05,
                &case,
                inject,
                &format!("SGD ({backend})"),
            );
            check::<B, _>(
                || AdamConfig::adam().init::<B>().unwrap(),
                0.01,
                &case,
                inject,
                &format!("Adam ({backend})"),
            );
            check::<B, _>(
                || AdamConfig::adamw().init::<B>().unwrap(),
                0.01,
                &case,
                inject,
                &format!("AdamW ({backend})"),
            );
        }
    }
}

#[test]
fn scaled_run_with_injected_inf_matches_control_ndarray() {
    all::<NdAd>("NdArray");
}

#[test]
fn scaled_run_with_injected_inf_matches_control_flex() {
    all::<FlexAd>("Flex");
}
