//! Inputs of the tier-2 CubeCL tests, uploaded and synced before the ops under test.

use burn::tensor::backend::Backend;
use burn::tensor::{Tensor, TensorData};
use burnacc_tests::rng::HostRng;

/// Uniform values in [-2, 2) of `shape` (the same for every backend at a given `seed`), on the
/// default device and synced, so that the upload is not in the fusion block of the ops under
/// test (an op no fuser takes would lead it).
pub fn uniform<B: Backend, const D: usize>(seed: u64, shape: [usize; D]) -> Tensor<B, D> {
    let values = HostRng::new(seed).uniform_vec(shape.iter().product(), -2.0, 2.0);
    let data = TensorData::new(values, shape.to_vec()).convert::<B::FloatElem>();
    let device = Default::default();
    let tensor = Tensor::<B, D>::from_data(data, &device);
    B::sync(&device).expect("the device syncs");
    tensor
}
