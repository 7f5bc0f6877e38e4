//! The optimizers' multi-tensor path (a routed `burnacc_kernels::optim` step over all
//! parameters at once) against their per-parameter path, over several steps with a skipped
//! one in the middle, for SGD (momentum, Nesterov) and Adam/AdamW:
//! - routed to the plain-Burn reference on NdArray: bit-identical parameters and state (the
//!   plumbing: collection, per-parameter step counters, skip, state round trip);
//! - routed to Flex's fused loop and to the CubeCL kernels through Fusion on wgpu: equal to
//!   f32 precision, and the fused launch counters increased; on Flex every parameter and
//!   state buffer is updated in place (the optimizer takes the parameters out of the module
//!   instead of copying them).

use crate::common::*;
use burn::backend::Wgpu;
use burn::backend::{Autodiff, Flex, NdArray};
use burn::tensor::backend::AutodiffBackend;
use burnacc_amp::optim::{
    AdamConfig, SgdConfig, SyncFreeOptimizer, route_adam_of_backend, route_sgd_of_backend,
};
use burnacc_kernels::optim::{
    MultiTensorOptim, multi_tensor_adam_launches, multi_tensor_buffer_copies,
    multi_tensor_sgd_launches,
};

/// Steps of each run; the step at [`SKIPPED`] has `found_inf = 1`.
const STEPS: usize = 5;
const SKIPPED: usize = 2;
const LR: f64 = 0.05;

/// Parameters after [`STEPS`] steps of the optimizer `make` builds, routed or not.
fn run<B, O>(make: &dyn Fn() -> O, routed: bool) -> Vec<Vec<f32>>
where
    B: AutodiffBackend,
    B::InnerBackend: MultiTensorOptim,
    O: SyncFreeOptimizer<Mlp<B>, B>,
{
    let device = B::Device::default();
    let _routes = routed.then(|| {
        (
            route_adam_of_backend::<B::InnerBackend>(),
            route_sgd_of_backend::<B::InnerBackend>(),
        )
    });
    let mut optim = make();
    let mut model = Mlp::<B>::new(&device);
    for step in 0..STEPS {
        let grads = fixed_grads(&model, step);
        let found = flag::<B::InnerBackend>(if step == SKIPPED { 1.0 } else { 0.0 }, &device);
        // A decaying learning rate, so that every step's hyper-parameters matter.
        let lr = LR / (1.0 + step as f64);
        model = optim.step(lr, model, grads, Some(&found));
    }
    params(&model)
}

fn sgd_configs() -> Vec<SgdConfig> {
    let momentum = SgdConfig {
        momentum: 0.9,
        dampening: 0.1,
        weight_decay: 1e-3,
        nesterov: false,
    };
    vec![
        SgdConfig::default(),
        momentum,
        SgdConfig {
            nesterov: true,
            dampening: 0.0,
            ..momentum
        },
    ]
}

fn adam_configs() -> Vec<AdamConfig> {
    vec![
        AdamConfig::adam(),
        AdamConfig {
            weight_decay: 0.1,
            ..AdamConfig::adam()
        },
        AdamConfig::adamw(),
    ]
}

/// Largest `|a − b| / max(|b|, 1e-3)` over all parameters.
fn max_rel(a: &[Vec<f32>], b: &[Vec<f32>]) -> f64 {
    a.iter()
        .flatten()
        .zip(b.iter().flatten())
        .map(|(&x, &y)| f64::from((x - y).abs()) / f64::from(y.abs()).max(1e-3))
        .fold(0.0, f64::max)
}

/// Every config, routed vs not; `tolerance = None` asks for bit equality.
fn check<B>(backend: &str, tolerance: Option<f64>)
where
    B: AutodiffBackend,
    B::InnerBackend: MultiTensorOptim,
{
    for config in sgd_configs() {
        let make = || config.init::<B>().unwrap();
        let (plain, fused) = (run::<B, _>(&make, false), run::<B, _>(&make, true));
        compare(backend, &format!("{config:?}"), &plain, &fused, tolerance);
    }
    for config in adam_configs() {
        let make = || config.init::<B>().unwrap();
        let (plain, fused) = (run::<B, _>(&make, false), run::<B, _>(&make, true));
        compare(backend, &format!("{config:?}"), &plain, &fused, tolerance);
    }
}

fn compare(
    backend: &str,
    what: &str,
    plain: &[Vec<f32>],
    fused: &[Vec<f32>],
    tolerance: Option<f64>,
) {
    assert_ne!(
        plain,
        params(&Mlp::<NdAd>::new(&Default::default())),
        "{backend} {what}: nothing moved"
    );
    match tolerance {
        None => assert_eq!(
            plain, fused,
            "{backend} {what}: the routed reference differs"
        ),
        Some(tol) => {
            let err = max_rel(fused, plain);
            assert!(
                err <= tol,
                "{backend} {what}: fused differs from per-parameter by {err:e}"
            );
        }
    }
}

#[test]
fn routed_reference_is_bit_identical_on_ndarray() {
    check::<Autodiff<NdArray>>("NdArray", None);
}

#[test]
fn flex_fused_loop_matches_per_parameter_path() {
    let (adam, sgd) = (multi_tensor_adam_launches(), multi_tensor_sgd_launches());
    let copies = multi_tensor_buffer_copies();
    check::<Autodiff<Flex>>("Flex", Some(1e-5));
    assert_eq!(
        multi_tensor_buffer_copies(),
        copies,
        "the fused loops copied parameters or state instead of updating them in place"
    );
    assert!(
        multi_tensor_adam_launches() > adam,
        "the fused Adam loop did not run"
    );
    assert!(
        multi_tensor_sgd_launches() > sgd,
        "the fused SGD loop did not run"
    );
}

#[test]
fn wgpu_kernels_match_per_parameter_path() {
    let (adam, sgd) = (multi_tensor_adam_launches(), multi_tensor_sgd_launches());
    check::<Autodiff<Wgpu>>("wgpu", Some(1e-5));
    assert!(
        multi_tensor_adam_launches() > adam,
        "the fused Adam kernel did not launch"
    );
    assert!(
        multi_tensor_sgd_launches() > sgd,
        "the fused SGD kernel did not launch"
    );
}
