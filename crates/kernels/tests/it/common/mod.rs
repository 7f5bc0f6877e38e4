//! What the LayerNorm kernel tests share: deterministic cases, the LayerNorm epsilon and the
//! relative error against the f64 reference (the bounds are `burnacc_tests::tolerance`'s).

#![allow(dead_code)] // each test file uses part of it

use burn::tensor::backend::Backend;
use burn::tensor::{Tensor, TensorData, TensorPrimitive};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

pub const EPS: f64 = 1e-5;

/// Deterministic inputs of one case, as f32 values (exactly representable in f64 too).
pub struct Case {
    pub dims: Vec<usize>,
    pub x: Vec<f32>,
    pub gamma: Vec<f32>,
    pub beta: Vec<f32>,
    pub grad_out: Vec<f32>,
}

impl Case {
    pub fn new(dims: &[usize], seed: u64) -> Self {
        let mut rng = StdRng::seed_from_u64(seed);
        let numel: usize = dims.iter().product();
        let width = dims[dims.len() - 1];
        let mut uniform = |n: usize, lo: f32, hi: f32| -> Vec<f32> {
            (0..n).map(|_| rng.random_range(lo..hi)).collect()
        };
        // An offset mean and a spread of about one, as activations entering a LayerNorm.
        let x = uniform(numel, -1.5, 2.5);
        let gamma = uniform(width, 0.5, 1.5);
        let beta = uniform(width, -0.5, 0.5);
        let grad_out = uniform(numel, -1.0, 1.0);
        Self {
            dims: dims.to_vec(),
            x,
            gamma,
            beta,
            grad_out,
        }
    }

    pub fn rows(&self) -> usize {
        self.dims[..self.dims.len() - 1].iter().product()
    }

    pub fn width(&self) -> usize {
        self.dims[self.dims.len() - 1]
    }

    pub fn tensor<B: Backend, const D: usize>(
        values: &[f32],
        dims: &[usize],
        device: &B::Device,
    ) -> Tensor<B, D> {
        let data = TensorData::new(values.to_vec(), dims.to_vec());
        Tensor::<B, D>::from_data(data, device)
    }

    pub fn inputs<B: Backend, const D: usize>(
        &self,
        device: &B::Device,
    ) -> (Tensor<B, D>, Tensor<B, 1>, Tensor<B, 1>, Tensor<B, D>) {
        let width = [self.width()];
        (
            Self::tensor(&self.x, &self.dims, device),
            Self::tensor(&self.gamma, &width, device),
            Self::tensor(&self.beta, &width, device),
            Self::tensor(&self.grad_out, &self.dims, device),
        )
    }
}

/// `max |actual − expected| / max |expected|`.
pub fn rel_err(actual: TensorData, expected: TensorData) -> f64 {
    let actual: Vec<f64> = actual.iter::<f64>().collect();
    let expected: Vec<f64> = expected.iter::<f64>().collect();
    assert_eq!(actual.len(), expected.len(), "element counts differ");
    let diff = actual
        .iter()
        .zip(&expected)
        .map(|(a, e)| (a - e).abs())
        .fold(0.0, f64::max);
    let scale = expected.iter().map(|e| e.abs()).fold(0.0, f64::max);
    assert!(
        actual.iter().all(|a| a.is_finite()),
        "non-finite values in the fused result"
    );
    diff / scale.max(f64::MIN_POSITIVE)
}

pub fn prim<B: Backend, const D: usize>(t: Tensor<B, D>) -> B::FloatTensorPrimitive {
    t.into_primitive().tensor()
}

pub fn wrap<B: Backend, const D: usize>(p: B::FloatTensorPrimitive) -> Tensor<B, D> {
    Tensor::from_primitive(TensorPrimitive::Float(p))
}
