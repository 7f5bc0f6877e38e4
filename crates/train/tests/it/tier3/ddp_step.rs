//! Data-parallel steps through the trainer's own [`Stepper`]: two peers as threads, each on
//! half of a batch, their gradients averaged between backward and unscale
//! ([`Stepper::step_synced`] with `burnacc_ddp`), train like one device on the joined batch.
//!
//! - f32: the same weights after three steps of SGD with momentum (rel ≤ 1e-5);
//! - bf16 autocast with loss scaling (the all-reduce before the unscale, as PyTorch DDP under
//!   AMP): the peers stay bit-identical to each other and within bf16's rounding of one device.

use burn::module::Module;
use burn::nn::{Linear, LinearConfig, Relu};
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::{Int, Tensor, TensorData};
use burnacc_ddp::{PeerConfig, run_local_peers};
use burnacc_tests::rng::HostRng;
use burnacc_train::recipe::{Recipe, parse_recipe};
use burnacc_train::stack::CpuAccBackend;
use burnacc_train::trainer::Stepper;
use std::path::Path;

/// The CPU acc stack's backend, and the inner backend its gradients live on.
type B = CpuAccBackend;
type Inner = <B as AutodiffBackend>::InnerBackend;

const ROWS: usize = 8;
const IN: usize = 12;
const CLASSES: usize = 4;
const STEPS: usize = 3;

#[derive(Module, Debug)]
struct Mlp<B: Backend> {
    first: Linear<B>,
    relu: Relu,
    second: Linear<B>,
}

impl<B: Backend> Mlp<B> {
    fn forward(&self, x: Tensor<B, 2>) -> Tensor<B, 2> {
        self.second
            .forward(self.relu.forward(self.first.forward(x)))
    }
}

fn start() -> Mlp<B> {
    let device = Default::default();
    B::seed(&device, 5);
    let model = Mlp::<B> {
        first: LinearConfig::new(IN, 32).init(&device),
        relu: Relu::new(),
        second: LinearConfig::new(32, CLASSES).init(&device),
    };
    model.clone().load_record(model.into_record())
}

fn recipe(sets: &[&str]) -> Recipe {
    let text = r#"
        [model]
        name = "resnet18"
        [data]
        dataset = "mock-imagenet"
        [train]
        batch_size = 8
        [optim]
        name = "sgd"
        lr = 0.1
        momentum = 0.9
        [backend]
        mode = "acc"
        device = "cpu"
    "#;
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    parse_recipe(text, Path::new("ddp.toml"), &sets).unwrap()
}

/// Rows `rows` of the fixed batch: inputs and labels.
fn batch(rows: std::ops::Range<usize>) -> (Tensor<B, 2>, Tensor<B, 1, Int>) {
    let mut rng = HostRng::new(17);
    let x: Vec<f32> = (0..ROWS * IN).map(|_| rng.uniform(-2.0, 2.0)).collect();
    let labels: Vec<i64> = (0..ROWS)
        .map(|_| rng.below(CLASSES as u64) as i64)
        .collect();
    let device = Default::default();
    let n = rows.len();
    let x = x[rows.start * IN..rows.end * IN].to_vec();
    let labels = labels[rows].to_vec();
    (
        Tensor::from_data(TensorData::new(x, [n, IN]), &device),
        Tensor::from_data(TensorData::new(labels, [n]), &device),
    )
}

/// Every parameter of `model`, flattened.
fn weights(model: &Mlp<B>) -> Vec<f32> {
    [&model.first, &model.second]
        .iter()
        .flat_map(|l| {
            let w = l
                .weight
                .val()
                .into_data()
                .convert::<f32>()
                .to_vec::<f32>()
                .unwrap();
            let b = l.bias.as_ref().unwrap().val().into_data();
            w.into_iter()
                .chain(b.convert::<f32>().to_vec::<f32>().unwrap())
        })
        .collect()
}

fn max_rel(a: &[f32], b: &[f32]) -> f32 {
    let scale = b.iter().fold(0f32, |m, v| m.max(v.abs()));
    a.iter().zip(b).fold(0f32, |m, (x, y)| m.max((x - y).abs())) / scale
}

/// `STEPS` trainer steps on `rows`, the gradients passed through `sync`: the final weights.
fn train(
    start: &Mlp<B>,
    recipe: &Recipe,
    rows: std::ops::Range<usize>,
    sync: &mut dyn FnMut(
        &Mlp<B>,
        burn::optim::GradientsParams,
    ) -> anyhow::Result<burn::optim::GradientsParams>,
) -> Vec<f32> {
    let mut stepper = Stepper::<B, Mlp<B>>::new(recipe, &Default::default()).unwrap();
    let mut model = start.clone();
    for _ in 0..STEPS {
        let (x, labels) = batch(rows.clone());
        let forward = |m: &Mlp<B>, _: &mut _| (m.forward(x), labels);
        model = stepper
            .step_synced(model, 0.1, forward, &mut |_| Ok(()), sync)
            .unwrap()
            .0;
    }
    weights(&model)
}

/// The weights of one device on the joined batch, and of each of two peers on its half, all
/// from the same start (built once: Flex has one generator per process).
fn one_and_peers(recipe: &Recipe) -> (Vec<f32>, Vec<Vec<f32>>) {
    let start = start();
    let one = train(&start, recipe, 0..ROWS, &mut |_, grads| Ok(grads));
    let peers =
        run_local_peers::<Inner, _, _>(PeerConfig::new(2), vec![Default::default(); 2], |peer| {
            let half = ROWS / 2;
            let rows = peer.rank() * half..(peer.rank() + 1) * half;
            let mut sync = |m: &Mlp<B>, grads| Ok(peer.all_reduce_gradients::<B, _>(m, grads)?);
            Ok(train(&start, recipe, rows, &mut sync))
        });
    (one, peers.into_iter().map(Result::unwrap).collect())
}

/// Steppers seed the device's generator: one test at a time.
static ALONE: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn f32_peers_train_like_one_device() {
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    let (one, peers) = one_and_peers(&recipe(&[]));
    for (rank, weights) in peers.iter().enumerate() {
        let rel = max_rel(weights, &one);
        println!("f32 rank {rank}: weights after {STEPS} steps rel {rel:.2e}");
        assert!(rel <= 1e-5, "rank {rank}: {rel:e}");
    }
    // The comparison can fail: one half alone trains elsewhere.
    let half = train(&start(), &recipe(&[]), 0..ROWS / 2, &mut |_, grads| {
        Ok(grads)
    });
    assert!(max_rel(&half, &one) > 1e-3);
}

#[test]
fn bf16_peers_with_loss_scaling_stay_identical_and_near_one_device() {
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    let amp = recipe(&["amp.enabled=true", "amp.grad_scaler=true"]);
    let (one, peers) = one_and_peers(&amp);
    assert_eq!(peers[0], peers[1], "the peers diverged");
    let rel = max_rel(&peers[0], &one);
    println!("bf16 + loss scaling: weights after {STEPS} steps rel {rel:.2e} to one device");
    // bf16 products summed over 4 rows twice instead of 8 rows once: bf16 rounding (2⁻⁸).
    assert!(rel <= 2e-2, "{rel:e}");
}
