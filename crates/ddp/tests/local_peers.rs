//! Two peers as threads on the CPU train exactly as one device on the joined batch: the same
//! averaged gradients (rel ≤ 1e-5) and, after three steps of SGD with momentum, the same
//! weights; peers that start from different weights are refused.

use burn::backend::flex::FlexDevice;
use burn::backend::{Autodiff, Flex};
use burn::module::Module;
use burn::nn::{Linear, LinearConfig, Relu};
use burn::optim::{GradientsParams, Optimizer, SgdConfig, momentum::MomentumConfig};
use burn::tensor::backend::Backend;
use burn::tensor::{Tensor, TensorData};
use burnacc_ddp::{DdpError, PeerConfig, run_local_peers};
use burnacc_tests::rng::HostRng;

type B = Autodiff<Flex>;

const ROWS: usize = 8;
const IN: usize = 6;
const OUT: usize = 3;
const STEPS: usize = 3;
const LR: f64 = 0.05;

#[derive(Module, Debug)]
struct Mlp<B: Backend> {
    first: Linear<B>,
    relu: Relu,
    second: Linear<B>,
}

impl<B: Backend> Mlp<B> {
    fn new(device: &B::Device) -> Self {
        Self {
            first: LinearConfig::new(IN, 16).init(device),
            relu: Relu::new(),
            second: LinearConfig::new(16, OUT).init(device),
        }
    }

    fn forward(&self, x: Tensor<B, 2>) -> Tensor<B, 2> {
        self.second
            .forward(self.relu.forward(self.first.forward(x)))
    }
}

/// The model every peer starts from: built once, its record loaded into each replica.
fn model(device: &FlexDevice) -> Mlp<B> {
    B::seed(device, 3);
    let model = Mlp::<B>::new(device);
    model.clone().load_record(model.into_record())
}

/// Rows `rows` of the fixed batch: inputs `[n, IN]` and targets `[n, OUT]`.
fn batch(rows: std::ops::Range<usize>) -> (Tensor<B, 2>, Tensor<B, 2>) {
    let mut rng = HostRng::new(11);
    let x: Vec<f32> = (0..ROWS * IN).map(|_| rng.uniform(-1.0, 1.0)).collect();
    let y: Vec<f32> = (0..ROWS * OUT).map(|_| rng.uniform(-1.0, 1.0)).collect();
    let n = rows.len();
    let device = Default::default();
    let take = |v: &[f32], width: usize| {
        let values = v[rows.start * width..rows.end * width].to_vec();
        Tensor::from_data(TensorData::new(values, [n, width]), &device)
    };
    (take(&x, IN), take(&y, OUT))
}

/// The mean squared error's gradients of `model` on `rows`.
fn gradients(model: &Mlp<B>, rows: std::ops::Range<usize>) -> GradientsParams {
    let (x, y) = batch(rows);
    let loss = (model.forward(x) - y).powi_scalar(2).mean();
    GradientsParams::from_grads(loss.backward(), model)
}

/// Every parameter of `model`, flattened, in visit order.
fn weights(model: &Mlp<B>) -> Vec<f32> {
    let layers = [&model.first, &model.second];
    layers
        .iter()
        .flat_map(|l| {
            let w = l.weight.val().into_data().to_vec::<f32>().unwrap();
            let b = l
                .bias
                .as_ref()
                .unwrap()
                .val()
                .into_data()
                .to_vec::<f32>()
                .unwrap();
            w.into_iter().chain(b)
        })
        .collect()
}

/// The first layer's weight gradient.
fn first_weight_grad(model: &Mlp<B>, grads: &GradientsParams) -> Vec<f32> {
    grads
        .get::<Flex, 2>(model.first.weight.id)
        .unwrap()
        .into_data()
        .to_vec()
        .unwrap()
}

fn max_rel(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    let scale = b.iter().fold(0f32, |m, v| m.max(v.abs()));
    a.iter().zip(b).fold(0f32, |m, (x, y)| m.max((x - y).abs())) / scale
}

/// `STEPS` steps of SGD with momentum; each step's gradients come from `step_grads`. Returns
/// the first step's first-layer gradient and the final weights.
fn train(
    mut model: Mlp<B>,
    step_grads: impl Fn(&Mlp<B>) -> Result<GradientsParams, DdpError>,
) -> Result<(Vec<f32>, Vec<f32>), DdpError> {
    let mut optim = SgdConfig::new()
        .with_momentum(Some(MomentumConfig::new().with_momentum(0.9)))
        .init();
    let mut first = None;
    for _ in 0..STEPS {
        let grads = step_grads(&model)?;
        first.get_or_insert_with(|| first_weight_grad(&model, &grads));
        model = optim.step(LR, model, grads);
    }
    Ok((first.unwrap(), weights(&model)))
}

#[test]
fn two_thread_peers_train_like_one_device_on_the_joined_batch() {
    let device = Default::default();
    let start = model(&device);
    let (one_grad, one_weights) = train(start.clone(), |m| Ok(gradients(m, 0..ROWS))).unwrap();

    // Small buckets: the 4 parameters go in 3 all-reduce calls.
    let config = PeerConfig {
        bucket_bytes: 400,
        ..PeerConfig::new(2)
    };
    let results = run_local_peers::<Flex, _, _>(config, vec![device; 2], |peer| {
        peer.check_parameters_agree(&start, &Default::default())?;
        let half = ROWS / 2;
        let rows = peer.rank() * half..(peer.rank() + 1) * half;
        train(start.clone(), |m| {
            peer.all_reduce_gradients::<B, _>(m, gradients(m, rows.clone()))
        })
    });
    let peers: Vec<_> = results.into_iter().map(Result::unwrap).collect();
    for (rank, (grad, weights)) in peers.iter().enumerate() {
        let (g, w) = (max_rel(grad, &one_grad), max_rel(weights, &one_weights));
        println!("rank {rank}: gradient rel {g:.2e}, weights after {STEPS} steps rel {w:.2e}");
        assert!(g <= 1e-5 && w <= 1e-5, "rank {rank}: {g:e}, {w:e}");
    }
    assert_eq!(peers[0], peers[1], "the peers diverged");

    // The comparison can fail: one half of the batch alone gives other gradients.
    let half = first_weight_grad(&start, &gradients(&start, 0..ROWS / 2));
    assert!(max_rel(&half, &one_grad) > 1e-3);
}

#[test]
fn peers_with_different_weights_are_refused() {
    let device = Default::default();
    let start = model(&device);
    let results = run_local_peers::<Flex, _, _>(PeerConfig::new(2), vec![device; 2], |peer| {
        let model = if peer.rank() == 1 {
            // Another seed: other initial weights.
            Mlp::<B>::new(&Default::default())
        } else {
            start.clone()
        };
        peer.check_parameters_agree(&model, &Default::default())
    });
    for (rank, result) in results.into_iter().enumerate() {
        let err = result.expect_err("different weights must be refused");
        assert!(
            matches!(err, DdpError::ParametersDiffer { .. }),
            "rank {rank}: {err}"
        );
    }
}
