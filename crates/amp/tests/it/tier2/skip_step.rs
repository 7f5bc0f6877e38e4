//! A step skipped on the device (`found_inf = 1.0`) against no step at all.
//!
//! Checked for SGD (momentum, dampening, weight decay; Nesterov) and Adam/AdamW, on NdArray,
//! Flex and wgpu:
//! - a skipped step leaves every parameter and every state tensor (step counter, momentum
//!   buffer, `exp_avg`, `exp_avg_sq`) bit-identical, with finite gradients and with gradients
//!   holding inf, -inf and NaN (which must not leak into parameters or state);
//! - the next clean step is bit-identical to the same step of a run that never had the
//!   skipped step, also when the skipped step is the very first one (SGD must then still
//!   initialise its momentum buffer to the gradient, not dampen it);
//! - `found_inf = 0.0` is bit-identical to passing no flag.

use crate::common::*;
use burn::module::ParamId;
use burn::optim::GradientsParams;
use burn::tensor::backend::AutodiffBackend;
use burnacc_amp::optim::{Adam, AdamConfig, Sgd, SgdConfig, SyncFreeOptimizer, WeightDecayMode};

const LR: f64 = 0.05;

/// Per-parameter state, as bit patterns: `(step, tensors)`; `None` for no state.
type StateBits = Vec<Option<(Vec<u32>, Vec<Vec<u32>>)>>;

/// An optimizer under test, with its state read back as bits.
trait Probe<B: AutodiffBackend>: SyncFreeOptimizer<Mlp<B>, B> {
    fn state_bits(&self, ids: [ParamId; 4]) -> StateBits;
}

impl<B: AutodiffBackend> Probe<B> for Sgd<B> {
    fn state_bits(&self, ids: [ParamId; 4]) -> StateBits {
        ids.into_iter()
            .enumerate()
            .map(|(k, id)| {
                if SHAPES[k].len() == 2 {
                    self.param_state::<2>(id)
                        .map(|s| (bits(&s.step), vec![bits(&s.momentum_buffer)]))
                } else {
                    self.param_state::<1>(id)
                        .map(|s| (bits(&s.step), vec![bits(&s.momentum_buffer)]))
                }
            })
            .collect()
    }
}

impl<B: AutodiffBackend> Probe<B> for Adam<B> {
    fn state_bits(&self, ids: [ParamId; 4]) -> StateBits {
        ids.into_iter()
            .enumerate()
            .map(|(k, id)| {
                if SHAPES[k].len() == 2 {
                    self.param_state::<2>(id)
                        .map(|s| (bits(&s.step), vec![bits(&s.exp_avg), bits(&s.exp_avg_sq)]))
                } else {
                    self.param_state::<1>(id)
                        .map(|s| (bits(&s.step), vec![bits(&s.exp_avg), bits(&s.exp_avg_sq)]))
                }
            })
            .collect()
    }
}

/// The step counters of `state`, as f32.
fn steps(state: &StateBits) -> Vec<Option<f32>> {
    state
        .iter()
        .map(|s| s.as_ref().map(|(step, _)| f32::from_bits(step[0])))
        .collect()
}

/// Asserts that no value of `state` is NaN or infinite.
fn assert_finite_state(state: &StateBits, what: &str) {
    for (k, s) in state.iter().enumerate() {
        if let Some((step, tensors)) = s {
            for v in step.iter().chain(tensors.iter().flatten()) {
                assert!(
                    f32::from_bits(*v).is_finite(),
                    "{what}: param {k} state holds {}",
                    f32::from_bits(*v)
                );
            }
        }
    }
}

/// The gradients of step `t` with inf, -inf and NaN written into every parameter's gradient.
fn poisoned_grads<B: AutodiffBackend>(model: &Mlp<B>, t: usize) -> GradientsParams {
    let device = model.w1.val().device();
    let poison = |mut v: Vec<f32>| {
        let n = v.len();
        v[0] = f32::INFINITY;
        v[n / 2] = f32::NAN;
        v[n - 1] = f32::NEG_INFINITY;
        v
    };
    let ids = model.ids();
    let mut grads = GradientsParams::new();
    grads.register::<Inner<B>, 2>(
        ids[0],
        tensor2(
            poison(grad_values(t, 0, IN * HIDDEN)),
            [IN, HIDDEN],
            &device,
        ),
    );
    grads.register::<Inner<B>, 1>(ids[1], tensor1(poison(grad_values(t, 1, HIDDEN)), &device));
    grads.register::<Inner<B>, 2>(
        ids[2],
        tensor2(
            poison(grad_values(t, 2, HIDDEN * OUT)),
            [HIDDEN, OUT],
            &device,
        ),
    );
    grads.register::<Inner<B>, 1>(ids[3], tensor1(poison(grad_values(t, 3, OUT)), &device));
    grads
}

/// Steps 0 and 1 clean, step 2 skipped twice (finite gradients, then non-finite ones), step 3
/// clean; against a control run of steps 0, 1 and 3.
fn skip_in_the_middle<B: AutodiffBackend, O: Probe<B>>(make: impl Fn() -> O, name: &str) {
    let device = device::<B>();
    let skip = flag::<Inner<B>>(1.0, &device);

    let mut model = Mlp::<B>::new(&device);
    let ids = model.ids();
    let mut optim = make();
    for t in 0..2 {
        let grads = fixed_grads(&model, t);
        model = optim.step(LR, model, grads, None);
    }
    let (params_before, state_before) = (param_bits(&model), optim.state_bits(ids));
    assert_eq!(
        steps(&state_before).iter().flatten().count(),
        4,
        "{name}: every parameter has state"
    );
    assert!(
        steps(&state_before).iter().all(|s| *s == Some(2.0)),
        "{name}: two steps counted"
    );

    let grads = fixed_grads(&model, 2);
    model = optim.step(LR, model, grads, Some(&skip));
    assert_eq!(
        param_bits(&model),
        params_before,
        "{name}: a skipped step changed a parameter"
    );
    assert_eq!(
        optim.state_bits(ids),
        state_before,
        "{name}: a skipped step changed the state"
    );

    let grads = poisoned_grads(&model, 2);
    model = optim.step(LR, model, grads, Some(&skip));
    assert_eq!(
        param_bits(&model),
        params_before,
        "{name}: a skipped step with inf/NaN gradients changed a parameter"
    );
    assert_eq!(
        optim.state_bits(ids),
        state_before,
        "{name}: a skipped step with inf/NaN gradients changed the state"
    );
    assert!(
        params(&model).iter().flatten().all(|v| v.is_finite()),
        "{name}: non-finite parameter"
    );
    assert_finite_state(&optim.state_bits(ids), name);

    let grads = fixed_grads(&model, 3);
    model = optim.step(LR, model, grads, None);

    let mut control = Mlp::<B>::new(&device);
    let mut control_optim = make();
    for t in [0, 1, 3] {
        let grads = fixed_grads(&control, t);
        control = control_optim.step(LR, control, grads, None);
    }
    assert_ne!(
        param_bits(&model),
        params_before,
        "{name}: the clean step after the skip did not step"
    );
    assert_eq!(
        param_bits(&model),
        param_bits(&control),
        "{name}: the step after a skip differs from a run without the skipped step"
    );
    let ids_control = control.ids();
    assert_eq!(
        optim.state_bits(ids),
        control_optim.state_bits(ids_control),
        "{name}: the state after a skip differs from a run without the skipped step"
    );
    assert!(
        steps(&optim.state_bits(ids))
            .iter()
            .all(|s| *s == Some(3.0)),
        "{name}: three steps counted"
    );
}

/// The first step skipped (non-finite gradients), then steps 0 and 1 clean; against a run of
/// steps 0 and 1.
fn skip_first<B: AutodiffBackend, O: Probe<B>>(make: impl Fn() -> O, name: &str) {
    let device = device::<B>();
    let mut model = Mlp::<B>::new(&device);
    let ids = model.ids();
    let init = param_bits(&model);
    let mut optim = make();
    let grads = poisoned_grads(&model, 5);
    model = optim.step(LR, model, grads, Some(&flag::<Inner<B>>(1.0, &device)));
    assert_eq!(
        param_bits(&model),
        init,
        "{name}: a skipped first step changed a parameter"
    );
    let state = optim.state_bits(ids);
    assert!(
        steps(&state).iter().all(|s| s.is_none() || *s == Some(0.0)),
        "{name}: a skipped first step counted: {:?}",
        steps(&state)
    );
    assert_finite_state(&state, name);

    let mut control = Mlp::<B>::new(&device);
    let mut control_optim = make();
    for t in 0..2 {
        let grads = fixed_grads(&model, t);
        model = optim.step(LR, model, grads, None);
        let grads = fixed_grads(&control, t);
        control = control_optim.step(LR, control, grads, None);
        assert_eq!(
            param_bits(&model),
            param_bits(&control),
            "{name}: step {t} after a skipped first step differs from a fresh run"
        );
        let ids_control = control.ids();
        assert_eq!(
            optim.state_bits(ids),
            control_optim.state_bits(ids_control),
            "{name}: state after step {t} differs from a fresh run"
        );
    }
}

/// `found_inf = 0.0` against no flag, over three steps.
fn zero_flag_is_no_flag<B: AutodiffBackend, O: Probe<B>>(make: impl Fn() -> O, name: &str) {
    let device = device::<B>();
    let clean = flag::<Inner<B>>(0.0, &device);
    let mut a = Mlp::<B>::new(&device);
    let mut b = Mlp::<B>::new(&device);
    let (mut oa, mut ob) = (make(), make());
    for t in 0..3 {
        let grads = fixed_grads(&a, t);
        a = oa.step(LR, a, grads, Some(&clean));
        let grads = fixed_grads(&b, t);
        b = ob.step(LR, b, grads, None);
    }
    assert_eq!(
        param_bits(&a),
        param_bits(&b),
        "{name}: found_inf = 0 differs from no flag"
    );
    let (ia, ib) = (a.ids(), b.ids());
    assert_eq!(
        oa.state_bits(ia),
        ob.state_bits(ib),
        "{name}: found_inf = 0 state differs"
    );
}

fn sgd_momentum() -> SgdConfig {
    SgdConfig {
        momentum: 0.9,
        dampening: 0.1,
        weight_decay: 0.01,
        nesterov: false,
    }
}

fn sgd_nesterov() -> SgdConfig {
    SgdConfig {
        momentum: 0.9,
        dampening: 0.0,
        weight_decay: 0.01,
        nesterov: true,
    }
}

fn adam_l2() -> AdamConfig {
    AdamConfig {
        weight_decay: 0.05,
        ..AdamConfig::adam()
    }
}

fn adamw() -> AdamConfig {
    AdamConfig {
        weight_decay: 0.1,
        decay_mode: WeightDecayMode::Decoupled,
        ..AdamConfig::adam()
    }
}

fn all_cases<B: AutodiffBackend>(backend: &str) {
    skip_in_the_middle::<B, _>(
        || sgd_momentum().init::<B>().unwrap(),
        &format!("SGD momentum ({backend})"),
    );
    skip_in_the_middle::<B, _>(
        || sgd_nesterov().init::<B>().unwrap(),
        &format!("SGD Nesterov ({backend})"),
    );
    skip_in_the_middle::<B, _>(
        || adam_l2().init::<B>().unwrap(),
        &format!("Adam ({backend})"),
    );
    skip_in_the_middle::<B, _>(
        || adamw().init::<B>().unwrap(),
        &format!("AdamW ({backend})"),
    );
}

#[test]
fn skipped_step_changes_nothing_and_next_step_matches_ndarray() {
    all_cases::<NdAd>("NdArray");
}

#[test]
fn skipped_step_changes_nothing_and_next_step_matches_flex() {
    all_cases::<FlexAd>("Flex");
}

#[test]
fn skipped_step_changes_nothing_and_next_step_matches_wgpu() {
    all_cases::<WgpuAd>("wgpu");
}

#[test]
fn plain_sgd_skip_changes_nothing() {
    type B = NdAd;
    let device = device::<B>();
    let mut model = Mlp::<B>::new(&device);
    let init = param_bits(&model);
    let mut optim = SgdConfig::default().init::<B>().unwrap();
    let grads = poisoned_grads(&model, 0);
    model = optim.step(LR, model, grads, Some(&flag::<Inner<B>>(1.0, &device)));
    assert_eq!(param_bits(&model), init);
    assert!(
        optim.state_bits(model.ids()).iter().all(Option::is_none),
        "plain SGD keeps no state"
    );
}

#[test]
fn skipped_first_step_then_fresh_start() {
    skip_first::<NdAd, _>(|| sgd_momentum().init::<NdAd>().unwrap(), "SGD momentum");
    skip_first::<NdAd, _>(|| sgd_nesterov().init::<NdAd>().unwrap(), "SGD Nesterov");
    skip_first::<NdAd, _>(|| adam_l2().init::<NdAd>().unwrap(), "Adam");
    skip_first::<NdAd, _>(|| adamw().init::<NdAd>().unwrap(), "AdamW");
    skip_first::<FlexAd, _>(
        || sgd_momentum().init::<FlexAd>().unwrap(),
        "SGD momentum (Flex)",
    );
    skip_first::<FlexAd, _>(|| adamw().init::<FlexAd>().unwrap(), "AdamW (Flex)");
}

#[test]
fn zero_found_inf_equals_no_flag() {
    zero_flag_is_no_flag::<NdAd, _>(|| sgd_momentum().init::<NdAd>().unwrap(), "SGD momentum");
    zero_flag_is_no_flag::<NdAd, _>(|| adamw().init::<NdAd>().unwrap(), "AdamW");
    zero_flag_is_no_flag::<FlexAd, _>(|| adam_l2().init::<FlexAd>().unwrap(), "Adam (Flex)");
}
