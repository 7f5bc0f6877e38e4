//! The data-parallel tests' model and data: a small MLP on a fixed batch, trained with SGD
//! and momentum, and the comparisons.
#![allow(dead_code)]

use burn::backend::flex::FlexDevice;
use burn::backend::{Autodiff, Flex};
use burn::module::Module;
use burn::nn::{Linear, LinearConfig, Relu};
use burn::optim::{GradientsParams, Optimizer, SgdConfig, momentum::MomentumConfig};
use burn::tensor::backend::Backend;
use burn::tensor::{Tensor, TensorData};
use burnacc_ddp::DdpError;
use burnacc_tests::rng::HostRng;

pub type B = Autodiff<Flex>;

pub const ROWS: usize = 8;
pub const IN: usize = 6;
pub const OUT: usize = 3;
pub const STEPS: usize = 3;
pub const LR: f64 = 0.05;

#[derive(Module, Debug)]
pub struct Mlp<B: Backend> {
    pub first: Linear<B>,
    pub relu: Relu,
    pub second: Linear<B>,
}

impl<B: Backend> Mlp<B> {
    pub fn new(device: &B::Device) -> Self {
        Self {
            first: LinearConfig::new(IN, 16).init(device),
            relu: Relu::new(),
            second: LinearConfig::new(16, OUT).init(device),
        }
    }

    pub fn forward(&self, x: Tensor<B, 2>) -> Tensor<B, 2> {
        self.second
            .forward(self.relu.forward(self.first.forward(x)))
    }
}

/// The model every peer starts from: built once, its record loaded into each replica.
pub fn model(device: &FlexDevice) -> Mlp<B> {
    B::seed(device, 3);
    let model = Mlp::<B>::new(device);
    model.clone().load_record(model.into_record())
}

/// Rows `rows` of the fixed batch: inputs `[n, IN]` and targets `[n, OUT]`.
pub fn batch(rows: std::ops::Range<usize>) -> (Tensor<B, 2>, Tensor<B, 2>) {
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
pub fn gradients(model: &Mlp<B>, rows: std::ops::Range<usize>) -> GradientsParams {
    let (x, y) = batch(rows);
    let loss = (model.forward(x) - y).powi_scalar(2).mean();
    GradientsParams::from_grads(loss.backward(), model)
}

/// Every parameter of `model`, flattened, in visit order.
pub fn weights(model: &Mlp<B>) -> Vec<f32> {
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
pub fn first_weight_grad(model: &Mlp<B>, grads: &GradientsParams) -> Vec<f32> {
    grads
        .get::<Flex, 2>(model.first.weight.id)
        .unwrap()
        .into_data()
        .to_vec()
        .unwrap()
}

pub fn max_rel(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    let scale = b.iter().fold(0f32, |m, v| m.max(v.abs()));
    a.iter().zip(b).fold(0f32, |m, (x, y)| m.max((x - y).abs())) / scale
}

/// `STEPS` steps of SGD with momentum; each step's gradients come from `step_grads`. Returns
/// the first step's first-layer gradient and the final weights.
pub fn train(
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
