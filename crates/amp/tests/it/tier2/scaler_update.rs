//! The scale update and the unscale against PyTorch's rules (`_amp_update_scale_` and
//! `_amp_foreach_non_finite_check_and_unscale_`), traced by hand step by step.
//!
//! Checked with the scale and growth tracker read back after every update (on NdArray, Flex
//! and wgpu): growth happens after exactly `growth_interval` clean steps and not before; an
//! overflow (inf or NaN) backs off and restarts the tracker, also on the step that would have
//! grown; a growth that would make the scale inf is not applied (the tracker still restarts);
//! non-default factors multiply exactly. And unscaling (on NdArray and Flex): for
//! power-of-two scales the unscaled gradient is bit-identical to the gradient of the unscaled
//! loss, for other scales it is `scaled_grad * f32(1 / f64(scale))`, as PyTorch computes the
//! reciprocal.

use crate::common::*;
use burn::optim::GradientsParams;
use burn::tensor::Tensor;
use burn::tensor::backend::AutodiffBackend;
use burnacc_amp::scaler::{GradScaler, GradScalerConfig, GradScalerState};

/// How a step's gradients look.
#[derive(Clone, Copy, PartialEq)]
enum Grads {
    Finite,
    Inf,
    Nan,
}
use Grads::*;

/// One step with gradients registered directly (small finite values, or one inf/NaN
/// element), so that any scale up to `f32::MAX` can be driven; returns the state after the
/// update.
fn step<B: AutodiffBackend>(
    scaler: &mut GradScaler<B>,
    model: &Mlp<B>,
    grads: Grads,
) -> GradScalerState {
    let device = device::<B>();
    let _ = scaler
        .scale(Tensor::<B, 1>::from_floats([0.5], &device))
        .unwrap();
    let mut g = GradientsParams::new();
    let mut b2 = vec![0.25, -0.5];
    match grads {
        Finite => {}
        Inf => b2[1] = f32::NEG_INFINITY,
        Nan => b2[0] = f32::NAN,
    }
    g.register(
        model.w1.id,
        Tensor::<Inner<B>, 2>::full([IN, HIDDEN], 0.125, &device),
    );
    g.register(
        model.b1.id,
        Tensor::<Inner<B>, 1>::full([HIDDEN], -0.75, &device),
    );
    g.register(
        model.w2.id,
        Tensor::<Inner<B>, 2>::full([HIDDEN, OUT], 1.5, &device),
    );
    g.register(model.b2.id, tensor1::<Inner<B>>(b2, &device));
    let _ = scaler.unscale(model, g).unwrap();
    let found = host(&scaler.found_inf().unwrap())[0];
    assert_eq!(found, if grads == Finite { 0.0 } else { 1.0 }, "found_inf");
    scaler.update().unwrap();
    scaler.state()
}

fn state(scale: f32, growth_tracker: u32) -> GradScalerState {
    GradScalerState {
        scale,
        growth_tracker,
    }
}

/// Runs `plan` on NdArray, Flex and wgpu and compares the state after each update with
/// `expected`.
fn trace(config: GradScalerConfig, plan: &[Grads], expected: &[(f32, u32)]) {
    trace_on::<NdAd>(config, plan, expected);
    trace_on::<FlexAd>(config, plan, expected);
    trace_on::<WgpuAd>(config, plan, expected);
}

fn trace_on<B: AutodiffBackend>(config: GradScalerConfig, plan: &[Grads], expected: &[(f32, u32)]) {
    let model = Mlp::<B>::new(&device::<B>());
    let mut scaler = GradScaler::<B>::new(config, &device::<B>()).unwrap();
    assert_eq!(plan.len(), expected.len());
    for (i, (&grads, &(scale, tracker))) in plan.iter().zip(expected).enumerate() {
        assert_eq!(
            step(&mut scaler, &model, grads),
            state(scale, tracker),
            "after update {}",
            i + 1
        );
    }
    assert_eq!(
        host(&scaler.scale_tensor()),
        vec![expected.last().unwrap().0]
    );
}

fn config(init_scale: f32, growth_interval: u32) -> GradScalerConfig {
    GradScalerConfig {
        init_scale,
        growth_interval,
        ..GradScalerConfig::default()
    }
}

#[test]
fn grows_after_exactly_growth_interval_clean_steps() {
    trace(
        config(1024.0, 4),
        &[Finite; 9],
        &[
            (1024.0, 1),
            (1024.0, 2),
            (1024.0, 3),
            (2048.0, 0),
            (2048.0, 1),
            (2048.0, 2),
            (2048.0, 3),
            (4096.0, 0),
            (4096.0, 1),
        ],
    );
}

#[test]
fn overflow_backs_off_and_restarts_the_tracker() {
    trace(
        config(1024.0, 4),
        &[
            Finite, Finite, Finite, Inf, Finite, Finite, Finite, Nan, Inf, Finite, Finite, Finite,
            Finite,
        ],
        &[
            (1024.0, 1),
            (1024.0, 2),
            (1024.0, 3),
            // The step that would have grown overflows: backoff only.
            (512.0, 0),
            (512.0, 1),
            (512.0, 2),
            (512.0, 3),
            // NaN counts as an overflow.
            (256.0, 0),
            (128.0, 0),
            (128.0, 1),
            (128.0, 2),
            (128.0, 3),
            (256.0, 0),
        ],
    );
}

#[test]
fn growth_interval_one_grows_every_clean_step() {
    trace(
        config(1.0, 1),
        &[Finite, Finite, Inf, Finite],
        &[(2.0, 0), (4.0, 0), (2.0, 0), (4.0, 0)],
    );
}

#[test]
fn growth_is_skipped_when_the_grown_scale_is_inf() {
    let two_127 = 2.0f32.powi(127);
    // 2^127 * 2 = inf in f32: the scale stays, the tracker restarts.
    trace(
        config(two_127, 2),
        &[Finite, Finite, Finite, Finite, Inf, Finite, Finite],
        &[
            (two_127, 1),
            (two_127, 0),
            (two_127, 1),
            (two_127, 0),
            (two_127 / 2.0, 0),
            (two_127 / 2.0, 1),
            (two_127, 0),
        ],
    );
    // f32::MAX itself, and a growth factor that overflows from below.
    trace(
        config(f32::MAX, 1),
        &[Finite, Finite],
        &[(f32::MAX, 0), (f32::MAX, 0)],
    );
    let big = 1.0e38f32;
    trace(
        GradScalerConfig {
            init_scale: big,
            growth_factor: 4.0,
            growth_interval: 1,
            ..GradScalerConfig::default()
        },
        &[Finite, Inf, Finite],
        &[(big, 0), (big * 0.5, 0), (big * 2.0, 0)],
    );
}

#[test]
fn non_default_factors_multiply_exactly() {
    trace(
        GradScalerConfig {
            enabled: true,
            init_scale: 256.0,
            growth_factor: 3.0,
            backoff_factor: 0.25,
            growth_interval: 2,
        },
        &[Finite, Finite, Inf, Finite, Finite, Finite],
        &[
            (256.0, 1),
            (768.0, 0),
            (192.0, 0),
            (192.0, 1),
            (576.0, 0),
            (576.0, 1),
        ],
    );
}

/// The gradients of step 0's loss scaled by `scale`, unscaled, and of the unscaled loss,
/// as `(unscaled, scaled, reference)` per parameter.
fn unscale_with<B: AutodiffBackend>(scale: f32) -> Vec<(Vec<f32>, Vec<f32>, Vec<f32>)> {
    let device = device::<B>();
    let model = Mlp::<B>::new(&device);
    let mut scaler = GradScaler::<B>::new(config(scale, 2000), &device).unwrap();
    let scaled = loss_grads(scaler.scale(loss(&model, 0, &device)).unwrap(), &model);
    let scaled_values = grad_values(&model, &scaled);
    let unscaled = scaler.unscale(&model, scaled).unwrap();
    assert_eq!(host(&scaler.found_inf().unwrap()), vec![0.0]);
    let reference = loss_grads(loss(&model, 0, &device), &model);
    grad_values(&model, &unscaled)
        .into_iter()
        .zip(scaled_values)
        .zip(grad_values(&model, &reference))
        .map(|((u, s), r)| (u, s, r))
        .collect()
}

fn grad_values<B: AutodiffBackend>(model: &Mlp<B>, grads: &GradientsParams) -> Vec<Vec<f32>> {
    let [w1, b1, w2, b2] = model.ids();
    vec![
        host(&grads.get::<Inner<B>, 2>(w1).unwrap()),
        host(&grads.get::<Inner<B>, 1>(b1).unwrap()),
        host(&grads.get::<Inner<B>, 2>(w2).unwrap()),
        host(&grads.get::<Inner<B>, 1>(b2).unwrap()),
    ]
}

#[test]
fn power_of_two_scales_unscale_exactly() {
    for scale in [1.0, 0.125, 256.0, 65536.0, 2.0f32.powi(24), 2.0f32.powi(60)] {
        let grads = unscale_with::<NdAd>(scale)
            .into_iter()
            .chain(unscale_with::<FlexAd>(scale));
        for (k, (unscaled, scaled, reference)) in grads.enumerate() {
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(
                bits(&unscaled),
                bits(&reference),
                "scale {scale}: param {k}"
            );
            if scale != 1.0 {
                assert_ne!(
                    bits(&scaled),
                    bits(&reference),
                    "scale {scale}: param {k} was scaled"
                );
            }
        }
    }
}

#[test]
fn other_scales_unscale_by_the_rounded_f64_reciprocal() {
    for scale in [3.0f32, 1000.0, 12345.678] {
        let inv = (1.0 / f64::from(scale)) as f32;
        let grads = unscale_with::<NdAd>(scale)
            .into_iter()
            .chain(unscale_with::<FlexAd>(scale));
        for (k, (unscaled, scaled, reference)) in grads.enumerate() {
            let expected: Vec<u32> = scaled.iter().map(|g| (g * inv).to_bits()).collect();
            let actual: Vec<u32> = unscaled.iter().map(|g| g.to_bits()).collect();
            assert_eq!(actual, expected, "scale {scale}: param {k}");
            assert_close_f32(
                &unscaled,
                &reference,
                1e-5,
                1e-7,
                &format!("scale {scale}: param {k}"),
            );
        }
    }
}
