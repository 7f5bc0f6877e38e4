//! `Fusion<CubeAcc<R>>` (burnacc's CubeCL backend and fusion runtime) against Burn's own
//! `Fusion<CubeBackend<R>>` (`burn::backend::Wgpu`) on lavapipe, bit for bit: the runtime
//! runs Burn's CubeCL fusers unchanged, and this graph holds no chain of reductions (which
//! burnacc's sum-chain fuser would add in another order), so every kernel and every fused
//! sequence must compute the same values. Element-wise chains with broadcasting and strided
//! inputs, a matrix product with its bias and ReLU epilogue, reductions and softmax, and the
//! gradients of all of it through autodiff.

use burn::backend::Autodiff;
use burn::backend::wgpu::{WgpuDevice, WgpuRuntime};
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::{Tensor, TensorData, activation};
use burnacc_fusion::{CubeAcc, Fusion};
use burnacc_tests::rng::HostRng;

type Acc = Fusion<CubeAcc<WgpuRuntime>>;
type Burn = burn::backend::Wgpu;

fn tensor<B: Backend, const D: usize>(shape: [usize; D], seed: u64) -> Tensor<B, D> {
    let mut rng = HostRng::new(seed);
    let values = rng.uniform_vec(shape.iter().product(), -2.0, 2.0);
    Tensor::from_data(TensorData::new(values, shape.to_vec()), &Default::default())
}

fn bits<B: Backend, const D: usize>(t: Tensor<B, D>) -> Vec<u32> {
    let values: Vec<f32> = t.into_data().to_vec().unwrap();
    values.iter().map(|v| v.to_bits()).collect()
}

/// A small network's worth of ops on odd sizes; returns its outputs and, through autodiff,
/// the gradients of a weighted sum of them with respect to the three inputs.
fn graph<B: AutodiffBackend>() -> Vec<Vec<u32>> {
    let x = tensor::<B, 2>([7, 33], 1).require_grad();
    let w = tensor::<B, 2>([33, 19], 2).require_grad();
    let b = tensor::<B, 1>([19], 3).require_grad();
    // Matmul with a bias and ReLU epilogue.
    let h = activation::relu(x.clone().matmul(w.clone()) + b.clone().unsqueeze());
    // Softmax (reductions with element-wise prologues and epilogues) and a mean.
    let s = activation::softmax(h.clone(), 1);
    let m = h.clone().mean_dim(0);
    // Element-wise chain on a transposed (strided) input, broadcast against a row.
    let t = (w.clone().transpose().exp() * 0.5 - b.clone().unsqueeze_dim(1)).tanh();
    let loss = (s.clone() * tensor::<B, 2>([7, 19], 4)).sum()
        + m.clone().sum() * 0.25
        + (t.clone() * tensor::<B, 2>([19, 33], 5)).sum();
    let grads = loss.backward();
    let grad = |p: &Tensor<B, 2>| bits(p.grad(&grads).expect("a gradient"));
    vec![
        bits(h),
        bits(s),
        bits(m),
        bits(t),
        grad(&x),
        grad(&w),
        bits(b.grad(&grads).expect("a gradient")),
    ]
}

#[test]
fn cube_acc_computes_what_burns_fusion_computes_bit_for_bit() {
    let acc = graph::<Autodiff<Acc>>();
    let burn = graph::<Autodiff<Burn>>();
    let names = ["h", "softmax", "mean", "tanh chain", "dx", "dw", "db"];
    for ((name, got), want) in names.iter().zip(&acc).zip(&burn) {
        assert_eq!(got.len(), want.len(), "{name}: lengths");
        let differing = got.iter().zip(want).filter(|(a, b)| a != b).count();
        assert_eq!(
            differing,
            0,
            "{name}: {differing} of {} values differ",
            got.len()
        );
    }
}

#[test]
fn cube_acc_names_itself_and_its_inner_backend() {
    let name = Acc::name(&WgpuDevice::default());
    assert!(name.starts_with("fusion<cube-acc<cubecl<"), "{name}");
}
