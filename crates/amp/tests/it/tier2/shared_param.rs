//! A parameter shared by two fields of a module (tied weights: one `Param`, cloned, so one
//! id), against the same model with the parameter once.
//!
//! Checked: `GradScaler::unscale` divides the shared parameter's gradient by the scale once
//! (its unscaled gradient is bit-identical to the gradient of the unscaled loss, `x + y`), and
//! an optimizer step updates the parameter once, by that gradient, and leaves both fields
//! holding the same updated value (bit-identical to the host formula `p - lr * (x + y)` for
//! SGD), so the tie survives the step; the same for Adam, against a module holding the
//! parameter once.

use crate::common::*;
use burn::module::{Module, Param};
use burn::optim::GradientsParams;
use burn::tensor::Tensor;
use burn::tensor::backend::{AutodiffBackend, Backend};
use burnacc_amp::optim::{AdamConfig, SgdConfig, SyncFreeOptimizer};
use burnacc_amp::scaler::{GradScaler, GradScalerConfig};

/// `a` and `b` are the same parameter; `c` is another.
#[derive(Module, Debug)]
struct Tied<B: Backend> {
    a: Param<Tensor<B, 1>>,
    b: Param<Tensor<B, 1>>,
    c: Param<Tensor<B, 1>>,
}

/// The same function with the shared parameter held once.
#[derive(Module, Debug)]
struct Untied<B: Backend> {
    a: Param<Tensor<B, 1>>,
    c: Param<Tensor<B, 1>>,
}

const X: [f32; 3] = [0.5, -1.25, 2.0];
const Y: [f32; 3] = [0.75, 0.5, -0.375];
const Z: [f32; 3] = [1.5, -0.25, 0.125];
const P: [f32; 3] = [0.3, -0.2, 0.7];
const Q: [f32; 3] = [-0.4, 0.9, 0.1];

fn tied<B: Backend>(device: &B::Device) -> Tied<B> {
    let a = Param::from_tensor(Tensor::from_floats(P, device));
    Tied {
        b: a.clone(),
        a,
        c: Param::from_tensor(Tensor::from_floats(Q, device)),
    }
}

fn untied<B: Backend>(device: &B::Device) -> Untied<B> {
    Untied {
        a: Param::from_tensor(Tensor::from_floats(P, device)),
        c: Param::from_tensor(Tensor::from_floats(Q, device)),
    }
}

/// `sum(a * x) + sum(b * y) + sum(c * z)`: the gradient of the shared parameter is `x + y`.
fn tied_loss<B: Backend>(m: &Tied<B>, device: &B::Device) -> Tensor<B, 1> {
    let dot =
        |p: &Param<Tensor<B, 1>>, v: [f32; 3]| (p.val() * Tensor::from_floats(v, device)).sum();
    dot(&m.a, X) + dot(&m.b, Y) + dot(&m.c, Z)
}

fn untied_loss<B: Backend>(m: &Untied<B>, device: &B::Device) -> Tensor<B, 1> {
    let dot =
        |p: &Param<Tensor<B, 1>>, v: [f32; 3]| (p.val() * Tensor::from_floats(v, device)).sum();
    dot(&m.a, X) + dot(&m.a, Y) + dot(&m.c, Z)
}

fn x_plus_y() -> Vec<f32> {
    X.iter().zip(Y).map(|(x, y)| x + y).collect()
}

fn unscaled_once<B: AutodiffBackend>() {
    let device = device::<B>();
    let model = tied::<B>(&device);
    let mut scaler = GradScaler::<B>::new(
        GradScalerConfig {
            init_scale: 1024.0,
            ..GradScalerConfig::default()
        },
        &device,
    )
    .unwrap();
    let loss = scaler.scale(tied_loss(&model, &device)).unwrap();
    let grads = GradientsParams::from_grads(loss.backward(), &model);
    assert_eq!(
        host(&grads.get::<Inner<B>, 1>(model.a.id).unwrap()),
        x_plus_y().iter().map(|g| g * 1024.0).collect::<Vec<_>>()
    );
    let grads = scaler.unscale(&model, grads).unwrap();
    assert_eq!(
        host(&grads.get::<Inner<B>, 1>(model.a.id).unwrap()),
        x_plus_y(),
        "shared gradient unscaled once"
    );
    assert_eq!(
        host(&grads.get::<Inner<B>, 1>(model.c.id).unwrap()),
        Z.to_vec()
    );
}

#[test]
fn shared_gradient_is_unscaled_once() {
    unscaled_once::<NdAd>();
    unscaled_once::<FlexAd>();
}

fn sgd_updates_both_fields<B: AutodiffBackend>() {
    let device = device::<B>();
    let lr = 0.5;
    let mut model = tied::<B>(&device);
    let mut optim = SgdConfig::default().init::<B>().unwrap();
    for _ in 0..2 {
        let p = host(&model.a.val());
        let grads = GradientsParams::from_grads(tied_loss(&model, &device).backward(), &model);
        model = optim.step(lr, model, grads, None);
        let expected: Vec<f32> = p
            .iter()
            .zip(x_plus_y())
            .map(|(p, g)| p - lr as f32 * g)
            .collect();
        assert_eq!(host(&model.a.val()), expected, "first field");
        assert_eq!(
            host(&model.b.val()),
            expected,
            "second field of the shared parameter"
        );
        assert_eq!(model.a.id, model.b.id);
    }
    assert!(
        model.b.val().is_require_grad(),
        "the second field stays trainable"
    );
}

#[test]
fn sgd_updates_a_shared_parameter_once_in_both_fields() {
    sgd_updates_both_fields::<NdAd>();
    sgd_updates_both_fields::<FlexAd>();
}

#[test]
fn adam_on_tied_weights_equals_adam_on_the_single_parameter() {
    type B = NdAd;
    let device = device::<B>();
    let mut tied = tied::<B>(&device);
    let mut single = untied::<B>(&device);
    let mut opt_tied = AdamConfig::adamw().init::<B>().unwrap();
    let mut opt_single = AdamConfig::adamw().init::<B>().unwrap();
    for _ in 0..3 {
        let grads = GradientsParams::from_grads(tied_loss(&tied, &device).backward(), &tied);
        tied = opt_tied.step(0.1, tied, grads, None);
        let grads = GradientsParams::from_grads(untied_loss(&single, &device).backward(), &single);
        single = opt_single.step(0.1, single, grads, None);
        assert_eq!(bits(&tied.a.val()), bits(&single.a.val()));
        assert_eq!(
            bits(&tied.b.val()),
            bits(&single.a.val()),
            "second field of the shared parameter"
        );
        assert_eq!(bits(&tied.c.val()), bits(&single.c.val()));
    }
    let step = opt_tied.param_state::<1>(tied.a.id).unwrap().step;
    assert_eq!(
        host(&step),
        vec![3.0],
        "the shared parameter stepped once per step"
    );
}
