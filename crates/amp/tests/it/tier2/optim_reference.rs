//! The sync-free SGD, Adam and AdamW against PyTorch's update formulas evaluated on the host
//! in f64 (`torch/optim/sgd.py` `_single_tensor_sgd`, `torch/optim/adam.py`
//! `_single_tensor_adam`), and against Burn's own `burn::optim` SGD, Adam and AdamW, whose
//! updates are the same functions.
//!
//! Each run takes 6 steps with a learning rate that changes every step and gradients that
//! differ per step, parameter and element (registered into `GradientsParams`), on the NdArray
//! and Flex backends; after every step every element of every parameter, and of every state
//! tensor (step counter, momentum buffer, `exp_avg`, `exp_avg_sq`), must match the reference
//! within a relative tolerance of 1e-5.

use crate::common::*;
use burn::optim::Optimizer;
use burn::tensor::backend::AutodiffBackend;
use burnacc_amp::optim::{Adam, AdamConfig, Sgd, SgdConfig, SyncFreeOptimizer, WeightDecayMode};
use burnacc_tests::tolerance::{SYNC_FREE_OPTIMIZER_F32, SYNC_FREE_OPTIMIZER_F32_SECOND_MOMENT};

const STEPS: usize = 6;

/// The learning rate of step `t` (0-based): changes every step.
fn lr(base: f64, t: usize) -> f64 {
    base * (1.0 - 0.07 * t as f64)
}

/// The f64 host reference, one optimizer over the four parameters of [`Mlp`].
struct Reference {
    params: Vec<Vec<f64>>,
    /// SGD momentum buffers (`None` before the first step, as in PyTorch).
    bufs: Vec<Option<Vec<f64>>>,
    exp_avg: Vec<Vec<f64>>,
    exp_avg_sq: Vec<Vec<f64>>,
    step: i32,
}

impl Reference {
    fn new<B: AutodiffBackend>(model: &Mlp<B>) -> Self {
        let params: Vec<Vec<f64>> = params(model)
            .into_iter()
            .map(|p| p.into_iter().map(f64::from).collect())
            .collect();
        let zeros: Vec<Vec<f64>> = params.iter().map(|p| vec![0.0; p.len()]).collect();
        Self {
            bufs: vec![None; params.len()],
            exp_avg: zeros.clone(),
            exp_avg_sq: zeros,
            params,
            step: 0,
        }
    }

    /// The gradients of step `t`, exactly the f32 values the device receives.
    fn grads(&self, t: usize) -> Vec<Vec<f64>> {
        (0..self.params.len())
            .map(|k| {
                grad_values(t, k, self.params[k].len())
                    .into_iter()
                    .map(f64::from)
                    .collect()
            })
            .collect()
    }

    /// `_single_tensor_sgd`.
    fn sgd(&mut self, c: &SgdConfig, lr: f64, t: usize) {
        let grads = self.grads(t);
        for (k, g) in grads.into_iter().enumerate() {
            let p = &mut self.params[k];
            let mut d: Vec<f64> = g
                .iter()
                .zip(p.iter())
                .map(|(g, p)| g + c.weight_decay * p)
                .collect();
            if c.momentum != 0.0 {
                let buf = match self.bufs[k].take() {
                    None => d.clone(),
                    Some(b) => b
                        .iter()
                        .zip(&d)
                        .map(|(b, d)| c.momentum * b + (1.0 - c.dampening) * d)
                        .collect(),
                };
                d = if c.nesterov {
                    d.iter()
                        .zip(&buf)
                        .map(|(d, b)| d + c.momentum * b)
                        .collect()
                } else {
                    buf.clone()
                };
                self.bufs[k] = Some(buf);
            }
            for (p, d) in p.iter_mut().zip(&d) {
                *p -= lr * d;
            }
        }
    }

    /// `_single_tensor_adam` (`decoupled_weight_decay` for AdamW, `amsgrad = False`).
    fn adam(&mut self, c: &AdamConfig, lr: f64, t: usize) {
        let (beta1, beta2) = c.betas;
        self.step += 1;
        let bc1 = 1.0 - beta1.powi(self.step);
        let bc2 = 1.0 - beta2.powi(self.step);
        let step_size = lr / bc1;
        let grads = self.grads(t);
        for (k, g) in grads.into_iter().enumerate() {
            let p = &mut self.params[k];
            let (m, v) = (&mut self.exp_avg[k], &mut self.exp_avg_sq[k]);
            for i in 0..p.len() {
                let mut g = g[i];
                match c.decay_mode {
                    WeightDecayMode::L2 => g += c.weight_decay * p[i],
                    WeightDecayMode::Decoupled => p[i] *= 1.0 - lr * c.weight_decay,
                }
                m[i] = beta1 * m[i] + (1.0 - beta1) * g;
                v[i] = beta2 * v[i] + (1.0 - beta2) * g * g;
                let denom = v[i].sqrt() / bc2.sqrt() + c.eps;
                p[i] -= step_size * m[i] / denom;
            }
        }
    }
}

/// Compares the model's parameters with the reference's.
fn check_params<B: AutodiffBackend>(model: &Mlp<B>, reference: &Reference, what: &str) {
    for (k, (actual, expected)) in params(model).iter().zip(&reference.params).enumerate() {
        assert_close(
            actual,
            expected,
            SYNC_FREE_OPTIMIZER_F32.rel,
            SYNC_FREE_OPTIMIZER_F32.abs,
            &format!("{what}: param {k}"),
        );
    }
}

/// Rank of parameter `k` of [`Mlp`] (`w1, b1, w2, b2`).
fn is_matrix(k: usize) -> bool {
    SHAPES[k].len() == 2
}

fn run_sgd<B: AutodiffBackend>(config: SgdConfig, base_lr: f64, name: &str) {
    let device = device::<B>();
    let mut model = Mlp::<B>::new(&device);
    let mut reference = Reference::new(&model);
    let mut optim: Sgd<B> = config.init().unwrap();
    for t in 0..STEPS {
        let lr = lr(base_lr, t);
        let grads = fixed_grads(&model, t);
        model = optim.step(lr, model, grads, None);
        reference.sgd(&config, lr, t);
        let what = format!("{name}, step {}", t + 1);
        check_params(&model, &reference, &what);

        for (k, id) in model.ids().into_iter().enumerate() {
            let state = if is_matrix(k) {
                optim
                    .param_state::<2>(id)
                    .map(|s| (host(&s.step), host(&s.momentum_buffer)))
            } else {
                optim
                    .param_state::<1>(id)
                    .map(|s| (host(&s.step), host(&s.momentum_buffer)))
            };
            match (&reference.bufs[k], state) {
                (None, None) => {}
                (Some(buf), Some((step, actual))) => {
                    assert_eq!(
                        step,
                        vec![(t + 1) as f32],
                        "{what}: step counter of param {k}"
                    );
                    assert_close(
                        &actual,
                        buf,
                        SYNC_FREE_OPTIMIZER_F32.rel,
                        SYNC_FREE_OPTIMIZER_F32.abs,
                        &format!("{what}: momentum buffer {k}"),
                    );
                }
                (expected, actual) => panic!(
                    "{what}: param {k} state presence: reference {}, device {}",
                    expected.is_some(),
                    actual.is_some()
                ),
            }
        }
    }
}

fn run_adam<B: AutodiffBackend>(config: AdamConfig, base_lr: f64, name: &str) {
    let device = device::<B>();
    let mut model = Mlp::<B>::new(&device);
    let mut reference = Reference::new(&model);
    let mut optim: Adam<B> = config.init().unwrap();
    for t in 0..STEPS {
        let lr = lr(base_lr, t);
        let grads = fixed_grads(&model, t);
        model = optim.step(lr, model, grads, None);
        reference.adam(&config, lr, t);
        let what = format!("{name}, step {}", t + 1);
        check_params(&model, &reference, &what);

        for (k, id) in model.ids().into_iter().enumerate() {
            let (step, m, v) = if is_matrix(k) {
                let s = optim.param_state::<2>(id).expect("state after a step");
                (host(&s.step), host(&s.exp_avg), host(&s.exp_avg_sq))
            } else {
                let s = optim.param_state::<1>(id).expect("state after a step");
                (host(&s.step), host(&s.exp_avg), host(&s.exp_avg_sq))
            };
            assert_eq!(
                step,
                vec![(t + 1) as f32],
                "{what}: step counter of param {k}"
            );
            assert_close(
                &m,
                &reference.exp_avg[k],
                SYNC_FREE_OPTIMIZER_F32.rel,
                SYNC_FREE_OPTIMIZER_F32.abs,
                &format!("{what}: exp_avg {k}"),
            );
            // v is O(g^2 (1 - beta2)) ~ 1e-4: an absolute floor scaled to it.
            assert_close(
                &v,
                &reference.exp_avg_sq[k],
                SYNC_FREE_OPTIMIZER_F32_SECOND_MOMENT.rel,
                SYNC_FREE_OPTIMIZER_F32_SECOND_MOMENT.abs,
                &format!("{what}: exp_avg_sq {k}"),
            );
        }
    }
}

fn sgd_configs() -> [(SgdConfig, f64, &'static str); 3] {
    [
        (SgdConfig::default(), 0.1, "SGD"),
        (
            SgdConfig {
                momentum: 0.9,
                dampening: 0.1,
                weight_decay: 0.01,
                nesterov: false,
            },
            0.05,
            "SGD momentum + dampening + weight decay",
        ),
        (
            SgdConfig {
                momentum: 0.8,
                dampening: 0.0,
                weight_decay: 1e-3,
                nesterov: true,
            },
            0.05,
            "SGD Nesterov + weight decay",
        ),
    ]
}

fn adam_configs() -> [(AdamConfig, f64, &'static str); 4] {
    [
        (AdamConfig::adam(), 0.01, "Adam"),
        (
            AdamConfig {
                weight_decay: 0.05,
                ..AdamConfig::adam()
            },
            0.01,
            "Adam + L2 weight decay",
        ),
        (
            AdamConfig {
                weight_decay: 0.1,
                ..AdamConfig::adamw()
            },
            0.01,
            "AdamW",
        ),
        (
            AdamConfig {
                betas: (0.8, 0.99),
                eps: 1e-3,
                weight_decay: 0.02,
                decay_mode: WeightDecayMode::Decoupled,
            },
            0.02,
            "AdamW betas (0.8, 0.99), eps 1e-3",
        ),
    ]
}

#[test]
fn sgd_matches_f64_reference_ndarray() {
    for (config, lr, name) in sgd_configs() {
        run_sgd::<NdAd>(config, lr, name);
    }
}

#[test]
fn sgd_matches_f64_reference_flex() {
    for (config, lr, name) in sgd_configs() {
        run_sgd::<FlexAd>(config, lr, name);
    }
}

#[test]
fn sgd_matches_f64_reference_wgpu() {
    for (config, lr, name) in sgd_configs() {
        run_sgd::<WgpuAd>(config, lr, name);
    }
}

#[test]
fn adam_matches_f64_reference_ndarray() {
    for (config, lr, name) in adam_configs() {
        run_adam::<NdAd>(config, lr, name);
    }
}

#[test]
fn adam_matches_f64_reference_flex() {
    for (config, lr, name) in adam_configs() {
        run_adam::<FlexAd>(config, lr, name);
    }
}

#[test]
fn adam_matches_f64_reference_wgpu() {
    for (config, lr, name) in adam_configs() {
        run_adam::<WgpuAd>(config, lr, name);
    }
}

/// Runs `ours` and Burn's `theirs` side by side on the same gradients and compares the
/// parameters after every step.
fn against_burn<B, O>(
    mut ours: impl SyncFreeOptimizer<Mlp<B>, B>,
    mut theirs: O,
    base_lr: f64,
    name: &str,
) where
    B: AutodiffBackend,
    O: Optimizer<Mlp<B>, B>,
{
    let device = device::<B>();
    let mut a = Mlp::<B>::new(&device);
    let mut b = a.clone();
    for t in 0..STEPS {
        let lr = lr(base_lr, t);
        let (ga, gb) = (fixed_grads(&a, t), fixed_grads(&b, t));
        a = ours.step(lr, a, ga, None);
        b = theirs.step(lr, b, gb);
        for (k, (pa, pb)) in params(&a).iter().zip(params(&b)).enumerate() {
            assert_close_f32(
                pa,
                &pb,
                SYNC_FREE_OPTIMIZER_F32.rel,
                SYNC_FREE_OPTIMIZER_F32.abs,
                &format!("{name} vs Burn, step {}: param {k}", t + 1),
            );
        }
    }
}

#[test]
fn sgd_matches_burn_sgd() {
    use burn::optim::decay::WeightDecayConfig;
    use burn::optim::momentum::MomentumConfig;
    type B = NdAd;
    against_burn::<B, _>(
        SgdConfig {
            momentum: 0.9,
            dampening: 0.1,
            weight_decay: 0.01,
            nesterov: false,
        }
        .init::<B>()
        .unwrap(),
        burn::optim::SgdConfig::new()
            .with_weight_decay(Some(WeightDecayConfig::new(0.01)))
            .with_momentum(Some(
                MomentumConfig::new().with_momentum(0.9).with_dampening(0.1),
            ))
            .init::<B, Mlp<B>>(),
        0.05,
        "SGD momentum + dampening",
    );
    against_burn::<B, _>(
        SgdConfig {
            momentum: 0.8,
            dampening: 0.0,
            weight_decay: 0.0,
            nesterov: true,
        }
        .init::<B>()
        .unwrap(),
        burn::optim::SgdConfig::new()
            .with_momentum(Some(
                MomentumConfig::new()
                    .with_momentum(0.8)
                    .with_dampening(0.0)
                    .with_nesterov(true),
            ))
            .init::<B, Mlp<B>>(),
        0.05,
        "SGD Nesterov",
    );
}

#[test]
fn adam_matches_burn_adam() {
    use burn::optim::decay::WeightDecayConfig;
    type B = NdAd;
    against_burn::<B, _>(
        AdamConfig {
            weight_decay: 0.05,
            ..AdamConfig::adam()
        }
        .init::<B>()
        .unwrap(),
        burn::optim::AdamConfig::new()
            .with_epsilon(1e-8)
            .with_weight_decay(Some(WeightDecayConfig::new(0.05)))
            .init::<B, Mlp<B>>(),
        0.01,
        "Adam + L2 weight decay",
    );
}

#[test]
fn adamw_matches_burn_adamw() {
    type B = NdAd;
    against_burn::<B, _>(
        AdamConfig {
            weight_decay: 0.1,
            ..AdamConfig::adamw()
        }
        .init::<B>()
        .unwrap(),
        burn::optim::AdamWConfig::new()
            .with_epsilon(1e-8)
            .with_weight_decay(0.1)
            .init::<B, Mlp<B>>(),
        0.01,
        "AdamW",
    );
}
