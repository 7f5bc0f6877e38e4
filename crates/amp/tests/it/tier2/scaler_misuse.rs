//! The `GradScaler` state machine and configuration, against the table of `StepStage` and
//! the errors `torch/amp/grad_scaler.py` raises.
//!
//! Checked: each out-of-order call returns its `ScalerError` (`AlreadyUnscaled`,
//! `UnscaleBeforeScale`, `UpdateBeforeUnscale`, `ScaleAfterUnscale`) and changes nothing:
//! stage, scale, growth tracker and found-inf flag are as before, and the step can go on to
//! the same result as a step without the failed call; invalid configs are rejected with the
//! offending field named; a disabled scaler passes the loss and gradients through bit for
//! bit, checks no order and keeps scale 1.0; `state`/`load_state` round-trip and continue
//! identically, and `load_state` rejects a bad scale without changing anything.

use crate::common::*;
use burn::optim::GradientsParams;
use burn::tensor::Tensor;
use burnacc_amp::scaler::{GradScaler, GradScalerConfig, GradScalerState, ScalerError, StepStage};

type B = NdAd;

fn new_scaler(config: GradScalerConfig) -> GradScaler<B> {
    GradScaler::new(config, &device::<B>()).unwrap()
}

/// The gradients of the scaled loss of step `step`.
fn scaled_grads(scaler: &mut GradScaler<B>, model: &Mlp<B>, step: usize) -> GradientsParams {
    let loss = scaler.scale(loss(model, step, &device::<B>())).unwrap();
    loss_grads(loss, model)
}

/// Gradients of `model`'s parameters, read back in field order.
fn grad_bits(model: &Mlp<B>, grads: &GradientsParams) -> Vec<Vec<u32>> {
    let [w1, b1, w2, b2] = model.ids();
    vec![
        bits(&grads.get::<Inner<B>, 2>(w1).unwrap()),
        bits(&grads.get::<Inner<B>, 1>(b1).unwrap()),
        bits(&grads.get::<Inner<B>, 2>(w2).unwrap()),
        bits(&grads.get::<Inner<B>, 1>(b2).unwrap()),
    ]
}

fn found(scaler: &GradScaler<B>) -> Option<Vec<f32>> {
    scaler.found_inf().map(|f| host(&f))
}

/// Everything observable about a scaler.
fn snapshot(scaler: &GradScaler<B>) -> (StepStage, GradScalerState, Option<Vec<f32>>, Vec<f32>) {
    (
        scaler.stage(),
        scaler.state(),
        found(scaler),
        host(&scaler.scale_tensor()),
    )
}

fn small() -> GradScalerConfig {
    GradScalerConfig {
        init_scale: 1024.0,
        growth_interval: 2,
        ..GradScalerConfig::default()
    }
}

#[test]
fn stages_follow_a_step() {
    let model = Mlp::<B>::new(&device::<B>());
    let mut scaler = new_scaler(small());
    assert_eq!(scaler.stage(), StepStage::Ready);
    assert!(scaler.found_inf().is_none());
    let loss = scaler.scale(loss(&model, 0, &device::<B>())).unwrap();
    assert_eq!(scaler.stage(), StepStage::Scaled);
    // A second loss in the same step (PyTorch allows several).
    let loss = loss + scaler.scale(loss_for_second_batch(&model)).unwrap();
    assert_eq!(scaler.stage(), StepStage::Scaled);
    let grads = loss_grads(loss, &model);
    let _ = scaler.unscale(&model, grads).unwrap();
    assert_eq!(scaler.stage(), StepStage::Unscaled);
    assert_eq!(found(&scaler), Some(vec![0.0]));
    scaler.update().unwrap();
    assert_eq!(scaler.stage(), StepStage::Ready);
    assert!(scaler.found_inf().is_none(), "update clears found_inf");
    assert_eq!(
        scaler.state(),
        GradScalerState {
            scale: 1024.0,
            growth_tracker: 1
        }
    );
}

fn loss_for_second_batch(model: &Mlp<B>) -> Tensor<B, 1> {
    loss(model, 1, &device::<B>())
}

#[test]
fn unscale_twice_is_already_unscaled_and_changes_nothing() {
    let model = Mlp::<B>::new(&device::<B>());
    let mut scaler = new_scaler(small());
    let grads = scaled_grads(&mut scaler, &model, 0);
    let grads = scaler.unscale(&model, grads).unwrap();
    let unscaled = grad_bits(&model, &grads);
    let before = snapshot(&scaler);

    // A second unscale of gradients holding an inf: refused before it looks at them.
    let mut poisoned = scaled_grads(&mut new_scaler(small()), &model, 0);
    poisoned.register(
        model.w1.id,
        Tensor::<Inner<B>, 2>::full([IN, HIDDEN], f32::INFINITY, &device::<B>()),
    );
    assert_eq!(
        scaler.unscale(&model, poisoned).err(),
        Some(ScalerError::AlreadyUnscaled)
    );
    assert_eq!(
        snapshot(&scaler),
        before,
        "a failed unscale changed the scaler"
    );
    assert_eq!(
        found(&scaler),
        Some(vec![0.0]),
        "found_inf kept from the first unscale"
    );
    assert_eq!(grad_bits(&model, &grads), unscaled);

    scaler.update().unwrap();
    assert_eq!(
        scaler.state(),
        GradScalerState {
            scale: 1024.0,
            growth_tracker: 1
        },
        "the step ends as if the failed call never happened"
    );
}

#[test]
fn unscale_before_scale_is_refused_and_changes_nothing() {
    let model = Mlp::<B>::new(&device::<B>());
    let mut scaler = new_scaler(small());
    let before = snapshot(&scaler);
    let grads = loss_grads(loss(&model, 0, &device::<B>()), &model);
    assert_eq!(
        scaler.unscale(&model, grads).err(),
        Some(ScalerError::UnscaleBeforeScale)
    );
    assert_eq!(snapshot(&scaler), before);
    assert_eq!(scaler.stage(), StepStage::Ready);
    assert!(scaler.found_inf().is_none());

    // Also in the step after a completed one.
    let grads = scaled_grads(&mut scaler, &model, 0);
    let _ = scaler.unscale(&model, grads).unwrap();
    scaler.update().unwrap();
    let before = snapshot(&scaler);
    let grads = loss_grads(loss(&model, 1, &device::<B>()), &model);
    assert_eq!(
        scaler.unscale(&model, grads).err(),
        Some(ScalerError::UnscaleBeforeScale)
    );
    assert_eq!(snapshot(&scaler), before);
}

#[test]
fn update_before_unscale_is_refused_and_changes_nothing() {
    let model = Mlp::<B>::new(&device::<B>());
    let mut scaler = new_scaler(small());
    let before = snapshot(&scaler);
    assert_eq!(scaler.update(), Err(ScalerError::UpdateBeforeUnscale));
    assert_eq!(snapshot(&scaler), before);

    let grads = scaled_grads(&mut scaler, &model, 0);
    let before = snapshot(&scaler);
    assert_eq!(before.0, StepStage::Scaled);
    assert_eq!(scaler.update(), Err(ScalerError::UpdateBeforeUnscale));
    assert_eq!(
        snapshot(&scaler),
        before,
        "a failed update changed the scaler"
    );

    // The step goes on normally.
    let _ = scaler.unscale(&model, grads).unwrap();
    scaler.update().unwrap();
    assert_eq!(scaler.state().growth_tracker, 1);
    // Update twice in one step: the second is before this step's unscale.
    let before = snapshot(&scaler);
    assert_eq!(scaler.update(), Err(ScalerError::UpdateBeforeUnscale));
    assert_eq!(snapshot(&scaler), before);
}

#[test]
fn scale_after_unscale_is_refused_and_changes_nothing() {
    let model = Mlp::<B>::new(&device::<B>());
    let mut scaler = new_scaler(small());
    let grads = scaled_grads(&mut scaler, &model, 0);
    let _ = scaler.unscale(&model, grads).unwrap();
    let before = snapshot(&scaler);
    let late = loss(&model, 1, &device::<B>());
    assert_eq!(
        scaler.scale(late).err(),
        Some(ScalerError::ScaleAfterUnscale)
    );
    assert_eq!(snapshot(&scaler), before);
    scaler.update().unwrap();
    assert_eq!(scaler.stage(), StepStage::Ready);
    assert!(
        scaler.scale(loss(&model, 1, &device::<B>())).is_ok(),
        "the next step scales"
    );
}

#[test]
fn invalid_configs_name_the_field() {
    let d = GradScalerConfig::default;
    let cases: Vec<(GradScalerConfig, &str)> = vec![
        (
            GradScalerConfig {
                init_scale: 0.0,
                ..d()
            },
            "init_scale",
        ),
        (
            GradScalerConfig {
                init_scale: -1.0,
                ..d()
            },
            "init_scale",
        ),
        (
            GradScalerConfig {
                init_scale: f32::NAN,
                ..d()
            },
            "init_scale",
        ),
        (
            GradScalerConfig {
                init_scale: f32::INFINITY,
                ..d()
            },
            "init_scale",
        ),
        (
            GradScalerConfig {
                growth_factor: 1.0,
                ..d()
            },
            "growth_factor",
        ),
        (
            GradScalerConfig {
                growth_factor: 0.5,
                ..d()
            },
            "growth_factor",
        ),
        (
            GradScalerConfig {
                growth_factor: f32::NAN,
                ..d()
            },
            "growth_factor",
        ),
        (
            GradScalerConfig {
                growth_factor: f32::INFINITY,
                ..d()
            },
            "growth_factor",
        ),
        (
            GradScalerConfig {
                backoff_factor: 1.5,
                ..d()
            },
            "backoff_factor",
        ),
        (
            GradScalerConfig {
                backoff_factor: 1.0,
                ..d()
            },
            "backoff_factor",
        ),
        (
            GradScalerConfig {
                backoff_factor: 0.0,
                ..d()
            },
            "backoff_factor",
        ),
        (
            GradScalerConfig {
                backoff_factor: f32::NAN,
                ..d()
            },
            "backoff_factor",
        ),
        (
            GradScalerConfig {
                growth_interval: 0,
                ..d()
            },
            "growth_interval",
        ),
        // A disabled config is checked too.
        (
            GradScalerConfig {
                backoff_factor: 1.5,
                ..GradScalerConfig::disabled()
            },
            "backoff_factor",
        ),
    ];
    for (config, field) in cases {
        let err = GradScaler::<B>::new(config, &device::<B>()).err();
        match &err {
            Some(ScalerError::InvalidConfig { field: f, .. }) => {
                assert_eq!(*f, field, "{config:?}")
            }
            other => panic!("{config:?}: expected InvalidConfig({field}), got {other:?}"),
        }
        let message = err.unwrap().to_string();
        assert!(message.contains(field), "{message:?} does not name {field}");
        assert_eq!(
            config.validate().err().map(|e| e.to_string()),
            Some(message)
        );
    }
    let err = GradScalerConfig {
        backoff_factor: 1.5,
        ..d()
    }
    .validate()
    .unwrap_err();
    assert_eq!(
        err,
        ScalerError::InvalidConfig {
            field: "backoff_factor",
            value: "1.5".into(),
            expected: "in (0, 1)"
        }
    );
}

#[test]
fn defaults_are_pytorchs() {
    let c = GradScalerConfig::default();
    assert_eq!(
        c,
        GradScalerConfig {
            enabled: true,
            init_scale: 65536.0,
            growth_factor: 2.0,
            backoff_factor: 0.5,
            growth_interval: 2000,
        }
    );
    assert_eq!(c.validate(), Ok(()));
    assert_eq!(
        GradScalerConfig::disabled(),
        GradScalerConfig {
            enabled: false,
            ..c
        }
    );
    let s = new_scaler(c);
    assert_eq!(
        s.state(),
        GradScalerState {
            scale: 65536.0,
            growth_tracker: 0
        }
    );
}

#[test]
fn disabled_scaler_passes_everything_through() {
    let device = device::<B>();
    let model = Mlp::<B>::new(&device);
    let mut scaler = new_scaler(GradScalerConfig::disabled());
    assert!(!scaler.is_enabled());
    assert_eq!(host(&scaler.scale_tensor()), vec![1.0]);

    // No order is checked: unscale and update before any scale.
    let grads = loss_grads(loss(&model, 0, &device), &model);
    let expected = grad_bits(&model, &grads);
    let grads = scaler.unscale(&model, grads).unwrap();
    assert_eq!(grad_bits(&model, &grads), expected);
    assert!(scaler.found_inf().is_none());
    scaler.update().unwrap();
    scaler.update().unwrap();

    let raw = loss(&model, 0, &device);
    let scaled = scaler.scale(raw.clone()).unwrap();
    assert_eq!(
        bits(&scaled),
        bits(&raw),
        "disabled scale must return the loss"
    );
    assert_eq!(scaler.stage(), StepStage::Ready);

    // Non-finite gradients pass untouched, and nothing is flagged.
    let mut grads = loss_grads(scaled, &model);
    grads.register(
        model.w2.id,
        Tensor::<Inner<B>, 2>::full([HIDDEN, OUT], f32::NAN, &device),
    );
    let expected = grad_bits(&model, &grads);
    let grads = scaler.unscale(&model, grads).unwrap();
    assert_eq!(grad_bits(&model, &grads), expected);
    assert!(scaler.found_inf().is_none());
    let _ = scaler.unscale(&model, grads).unwrap();
    scaler.update().unwrap();
    assert_eq!(
        scaler.state(),
        GradScalerState {
            scale: 1.0,
            growth_tracker: 0
        }
    );

    // load_state keeps a disabled scaler at 1.0.
    scaler
        .load_state(GradScalerState {
            scale: 4096.0,
            growth_tracker: 3,
        })
        .unwrap();
    assert_eq!(scaler.state().scale, 1.0);
}

/// Runs `n` steps starting at data step `from`; step `overflow` gets an inf gradient.
fn run(scaler: &mut GradScaler<B>, model: &Mlp<B>, from: usize, n: usize, overflow: Option<usize>) {
    for step in from..from + n {
        let mut grads = scaled_grads(scaler, model, step);
        if Some(step) == overflow {
            grads.register(
                model.b2.id,
                Tensor::<Inner<B>, 1>::full([OUT], f32::INFINITY, &device::<B>()),
            );
        }
        let _ = scaler.unscale(model, grads).unwrap();
        scaler.update().unwrap();
    }
}

#[test]
fn state_round_trips_through_load_state() {
    let model = Mlp::<B>::new(&device::<B>());
    let config = GradScalerConfig {
        init_scale: 4096.0,
        growth_interval: 3,
        ..GradScalerConfig::default()
    };
    let mut a = new_scaler(config);
    // Steps 0..5 with an overflow at 1: tracker 1, 0 (backoff), 1, 2, 0 (growth), 1.
    run(&mut a, &model, 0, 6, Some(1));
    let saved = a.state();
    assert_eq!(
        saved,
        GradScalerState {
            scale: 4096.0,
            growth_tracker: 1
        }
    );

    // Loaded mid-step: load_state starts a new step.
    let mut b2 = new_scaler(config);
    let _ = scaled_grads(&mut b2, &model, 0);
    assert_eq!(b2.stage(), StepStage::Scaled);
    b2.load_state(saved).unwrap();
    assert_eq!(b2.stage(), StepStage::Ready);
    assert_eq!(b2.state(), saved);
    assert_eq!(host(&b2.scale_tensor()), vec![4096.0]);

    // Both continue identically: 2 clean steps (growth at the second), then an overflow.
    run(&mut a, &model, 6, 3, Some(8));
    run(&mut b2, &model, 6, 3, Some(8));
    assert_eq!(a.state(), b2.state());
    assert_eq!(
        a.state(),
        GradScalerState {
            scale: 4096.0,
            growth_tracker: 0
        }
    );
}

#[test]
fn load_state_rejects_a_bad_scale_and_changes_nothing() {
    let model = Mlp::<B>::new(&device::<B>());
    let mut s = new_scaler(small());
    run(&mut s, &model, 0, 1, None);
    let _ = scaled_grads(&mut s, &model, 1);
    let before = snapshot(&s);
    for scale in [0.0, -2.0, f32::INFINITY, f32::NAN] {
        let err = s
            .load_state(GradScalerState {
                scale,
                growth_tracker: 0,
            })
            .unwrap_err();
        assert!(
            matches!(err, ScalerError::InvalidState(v) if v.to_bits() == scale.to_bits()),
            "{err:?}"
        );
        assert_eq!(
            snapshot(&s),
            before,
            "a rejected load_state changed the scaler"
        );
    }
}
