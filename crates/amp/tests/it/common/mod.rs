//! Shared fixtures of the integration tests: the CPU backends, a small two-layer model with
//! deterministic weights, deterministic data and gradients, and host read-back helpers.

#![allow(dead_code, missing_docs)]

use burn::backend::{Autodiff, Flex, NdArray};
use burn::module::{AutodiffModule, Module, ModuleVisitor, Param, ParamId};
use burn::optim::GradientsParams;
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::{Tensor, TensorData};

/// Autodiff over NdArray (f32).
pub type NdAd = Autodiff<NdArray>;
/// Autodiff over Flex (f32), the inner backend of the CPU stacks.
pub type FlexAd = Autodiff<Flex>;
/// The inner backend of `B`.
pub type Inner<B> = <B as AutodiffBackend>::InnerBackend;

/// Input features, hidden units and outputs of [`Mlp`].
pub const IN: usize = 4;
pub const HIDDEN: usize = 3;
pub const OUT: usize = 2;
/// Rows of a batch.
pub const BATCH: usize = 5;

/// `x @ w1 + b1 → tanh → @ w2 + b2`: two rank-2 and two rank-1 parameters.
#[derive(Module, Debug)]
pub struct Mlp<B: Backend> {
    pub w1: Param<Tensor<B, 2>>,
    pub b1: Param<Tensor<B, 1>>,
    pub w2: Param<Tensor<B, 2>>,
    pub b2: Param<Tensor<B, 1>>,
}

impl<B: Backend> Mlp<B> {
    /// Fixed weights, all of magnitude in `[0.1, 0.6]`, so relative tolerances are meaningful.
    pub fn new(device: &B::Device) -> Self {
        Self {
            w1: Param::from_tensor(tensor2(weights(IN * HIDDEN, 0.3), [IN, HIDDEN], device)),
            b1: Param::from_tensor(tensor1(weights(HIDDEN, 1.1), device)),
            w2: Param::from_tensor(tensor2(weights(HIDDEN * OUT, 2.7), [HIDDEN, OUT], device)),
            b2: Param::from_tensor(tensor1(weights(OUT, 4.2), device)),
        }
    }

    /// x: `[BATCH, IN]` → `[BATCH, OUT]`.
    pub fn forward(&self, x: Tensor<B, 2>) -> Tensor<B, 2> {
        let h = (x.matmul(self.w1.val()) + self.b1.val().unsqueeze()).tanh();
        h.matmul(self.w2.val()) + self.b2.val().unsqueeze()
    }

    /// The parameter ids, in field order.
    pub fn ids(&self) -> [ParamId; 4] {
        [self.w1.id, self.b1.id, self.w2.id, self.b2.id]
    }
}

/// The parameter shapes of [`Mlp`], in field order.
pub const SHAPES: [&[usize]; 4] = [&[IN, HIDDEN], &[HIDDEN], &[HIDDEN, OUT], &[OUT]];

/// `n` values of alternating sign and magnitude in `[0.1, 0.6]`.
pub fn weights(n: usize, seed: f32) -> Vec<f32> {
    (0..n)
        .map(|i| {
            let m = 0.35 + 0.25 * (seed + 1.7 * i as f32).sin();
            if i.is_multiple_of(2) { m } else { -m }
        })
        .collect()
}

/// Input batch `[BATCH, IN]` and target `[BATCH, OUT]` of step `step`.
pub fn batch<B: Backend>(step: usize, device: &B::Device) -> (Tensor<B, 2>, Tensor<B, 2>) {
    let s = step as f32;
    let x = (0..BATCH * IN)
        .map(|i| (0.9 * i as f32 + 0.4 * s).cos())
        .collect();
    let y = (0..BATCH * OUT)
        .map(|i| (0.6 * i as f32 - 0.3 * s).sin() * 0.8)
        .collect();
    (
        tensor2(x, [BATCH, IN], device),
        tensor2(y, [BATCH, OUT], device),
    )
}

/// Mean squared error of the model on step `step`'s batch.
pub fn loss<B: Backend>(model: &Mlp<B>, step: usize, device: &B::Device) -> Tensor<B, 1> {
    let (x, y) = batch::<B>(step, device);
    (model.forward(x) - y).powi_scalar(2).mean()
}

/// Gradient values of parameter `param` (index in field order) at step `step`: `n` values
/// of magnitude in about `[0.05, 1]`, different for every step, parameter and element.
pub fn grad_values(step: usize, param: usize, n: usize) -> Vec<f32> {
    (0..n)
        .map(|i| {
            let t = 0.77 * i as f32 + 1.31 * step as f32 + 2.9 * param as f32;
            let m = 0.5 + 0.45 * t.sin();
            if (i + step).is_multiple_of(3) { -m } else { m }
        })
        .collect()
}

/// Registers [`grad_values`] of step `step` for every parameter of `model`.
pub fn fixed_grads<B: AutodiffBackend>(model: &Mlp<B>, step: usize) -> GradientsParams {
    let device = model.w1.val().device();
    let mut grads = GradientsParams::new();
    let ids = model.ids();
    grads.register::<Inner<B>, 2>(
        ids[0],
        tensor2(grad_values(step, 0, IN * HIDDEN), [IN, HIDDEN], &device),
    );
    grads.register::<Inner<B>, 1>(ids[1], tensor1(grad_values(step, 1, HIDDEN), &device));
    grads.register::<Inner<B>, 2>(
        ids[2],
        tensor2(grad_values(step, 2, HIDDEN * OUT), [HIDDEN, OUT], &device),
    );
    grads.register::<Inner<B>, 1>(ids[3], tensor1(grad_values(step, 3, OUT), &device));
    grads
}

/// Gradients of [`loss`] w.r.t. the model's parameters, as `GradientsParams`.
pub fn loss_grads<B: AutodiffBackend>(loss: Tensor<B, 1>, model: &Mlp<B>) -> GradientsParams {
    GradientsParams::from_grads(loss.backward(), model)
}

pub fn tensor1<B: Backend>(values: Vec<f32>, device: &B::Device) -> Tensor<B, 1> {
    let n = values.len();
    Tensor::from_data(TensorData::new(values, [n]), device)
}

pub fn tensor2<B: Backend>(
    values: Vec<f32>,
    shape: [usize; 2],
    device: &B::Device,
) -> Tensor<B, 2> {
    Tensor::from_data(TensorData::new(values, shape), device)
}

/// An f32 `[1]` tensor holding `value` (a found-inf flag).
pub fn flag<B: Backend>(value: f32, device: &B::Device) -> Tensor<B, 1> {
    tensor1(vec![value], device)
}

/// The elements of a float tensor, read back as f32.
pub fn host<B: Backend, const D: usize>(tensor: &Tensor<B, D>) -> Vec<f32> {
    tensor.to_data().to_vec::<f32>().expect("an f32 tensor")
}

/// The bit patterns of a float tensor's elements.
pub fn bits<B: Backend, const D: usize>(tensor: &Tensor<B, D>) -> Vec<u32> {
    host(tensor).into_iter().map(f32::to_bits).collect()
}

/// The values of every float parameter of `module`, in visiting (field) order.
pub fn params<B: AutodiffBackend, M: AutodiffModule<B>>(module: &M) -> Vec<Vec<f32>> {
    struct Collect(Vec<Vec<f32>>);
    impl<B: Backend> ModuleVisitor<B> for Collect {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
            self.0.push(host(&param.val()));
        }
    }
    let mut collect = Collect(Vec::new());
    module.visit(&mut collect);
    collect.0
}

/// The bit patterns of every float parameter of `module`, in visiting (field) order.
pub fn param_bits<B: AutodiffBackend, M: AutodiffModule<B>>(module: &M) -> Vec<Vec<u32>> {
    params(module)
        .into_iter()
        .map(|p| p.into_iter().map(f32::to_bits).collect())
        .collect()
}

/// Asserts `|actual - expected| <= rtol * |expected| + atol` for every element.
#[track_caller]
pub fn assert_close(actual: &[f32], expected: &[f64], rtol: f64, atol: f64, what: &str) {
    assert_eq!(actual.len(), expected.len(), "{what}: length");
    for (i, (&a, &e)) in actual.iter().zip(expected).enumerate() {
        let err = (f64::from(a) - e).abs();
        assert!(
            err <= rtol * e.abs() + atol,
            "{what}[{i}]: got {a}, expected {e} (|error| = {err:e})"
        );
    }
}

/// [`assert_close`] of f32 against f32.
#[track_caller]
pub fn assert_close_f32(actual: &[f32], expected: &[f32], rtol: f64, atol: f64, what: &str) {
    let expected: Vec<f64> = expected.iter().map(|&e| f64::from(e)).collect();
    assert_close(actual, &expected, rtol, atol, what);
}

/// The default device of backend `B`.
pub fn device<B: Backend>() -> B::Device {
    Default::default()
}

/// Autodiff over wgpu (f32; Mesa's lavapipe where there is no GPU).
pub type WgpuAd = Autodiff<burn::backend::Wgpu>;
