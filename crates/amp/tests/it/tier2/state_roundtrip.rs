//! An optimizer's state exported to the host and imported into a fresh optimizer (what a
//! checkpoint and `--resume` do) continues bit for bit: the next steps of the fresh optimizer
//! equal those of the one that never stopped, for SGD with momentum, Adam and AdamW, on NdArray
//! and Flex. A state of another kind, or with other buffers, is refused and changes nothing.

use crate::common::*;
use burn::tensor::backend::AutodiffBackend;
use burnacc_amp::optim::{
    AdamConfig, OptimizerStateData, SgdConfig, StateError, SyncFreeOptimizer,
};

const LR: f64 = 0.05;

type Make<B> = fn() -> Box<dyn SyncFreeOptimizer<Mlp<B>, B>>;

fn sgd<B: AutodiffBackend>() -> Box<dyn SyncFreeOptimizer<Mlp<B>, B>> {
    let config = SgdConfig {
        momentum: 0.9,
        dampening: 0.1,
        weight_decay: 1e-3,
        nesterov: false,
    };
    Box::new(config.init::<B>().unwrap())
}

fn adam<B: AutodiffBackend>() -> Box<dyn SyncFreeOptimizer<Mlp<B>, B>> {
    Box::new(AdamConfig::adam().init::<B>().unwrap())
}

fn adamw<B: AutodiffBackend>() -> Box<dyn SyncFreeOptimizer<Mlp<B>, B>> {
    Box::new(AdamConfig::adamw().init::<B>().unwrap())
}

/// Two steps, export; then steps 2 and 3 by the original optimizer and by a fresh one that
/// imported the export, on equal copies of the model.
fn continues_bit_for_bit<B: AutodiffBackend>(make: Make<B>, name: &str) {
    let device = device::<B>();
    let mut model = Mlp::<B>::new(&device);
    let mut optim = make();
    for t in 0..2 {
        let grads = fixed_grads(&model, t);
        model = optim.step(LR, model, grads, None);
    }
    let exported = optim.state().unwrap();
    assert_eq!(
        exported.params.len(),
        4,
        "{name}: every parameter has state"
    );
    assert!(
        exported.params.values().all(|p| p.step == 2.0),
        "{name}: two steps counted"
    );
    let mut resumed = make();
    resumed.load_state(exported.clone(), &device).unwrap();
    assert_eq!(
        resumed.state().unwrap(),
        exported,
        "{name}: the import reads back equal"
    );

    let mut original = model.clone();
    let mut copy = model;
    for t in 2..4 {
        let grads = fixed_grads(&original, t);
        original = optim.step(LR, original, grads, None);
        let grads = fixed_grads(&copy, t);
        copy = resumed.step(LR, copy, grads, None);
    }
    assert_eq!(
        param_bits(&copy),
        param_bits(&original),
        "{name}: parameters"
    );
    assert_eq!(
        resumed.state().unwrap(),
        optim.state().unwrap(),
        "{name}: state"
    );
}

fn every_optimizer<B: AutodiffBackend>(backend: &str) {
    continues_bit_for_bit::<B>(sgd::<B>, &format!("SGD on {backend}"));
    continues_bit_for_bit::<B>(adam::<B>, &format!("Adam on {backend}"));
    continues_bit_for_bit::<B>(adamw::<B>, &format!("AdamW on {backend}"));
}

#[test]
fn exported_state_continues_bit_for_bit_ndarray() {
    every_optimizer::<NdAd>("NdArray");
}

#[test]
fn exported_state_continues_bit_for_bit_flex() {
    every_optimizer::<FlexAd>("Flex");
}

#[test]
fn a_state_of_another_kind_or_other_buffers_is_refused_and_changes_nothing() {
    let device = device::<FlexAd>();
    let mut model = Mlp::<FlexAd>::new(&device);
    let mut adam_optim = adam::<FlexAd>();
    let grads = fixed_grads(&model, 0);
    model = adam_optim.step(LR, model, grads, None);
    let adam_state = adam_optim.state().unwrap();

    let mut sgd_optim = sgd::<FlexAd>();
    let grads = fixed_grads(&model, 0);
    let _ = sgd_optim.step(LR, model, grads, None);
    let sgd_state = sgd_optim.state().unwrap();
    assert_eq!(
        sgd_optim.load_state(adam_state.clone(), &device),
        Err(StateError::Kind {
            expected: "sgd".into(),
            found: "adam".into()
        })
    );
    // AdamW reads Adam's buffers but is another optimizer.
    assert!(matches!(
        adamw::<FlexAd>().load_state(adam_state.clone(), &device),
        Err(StateError::Kind { .. })
    ));
    let mut missing: OptimizerStateData = adam_state;
    for param in missing.params.values_mut() {
        param.buffers.retain(|(name, _)| name != "exp_avg_sq");
    }
    assert!(matches!(
        adam_optim.load_state(missing, &device),
        Err(StateError::Buffers { .. })
    ));
    assert_eq!(
        sgd_optim.state().unwrap(),
        sgd_state,
        "a refused import changed SGD's state"
    );
}
