//! The fused CubeCL batch norm (wgpu) against `burn::nn::BatchNorm` in training mode under
//! `Autodiff<NdArray<f64>>` (its output and the gradients of a weighted sum of it): the
//! kernels alone, and `batch_norm` as one autodiff node over Burn's fusion (`Wgpu`) and over
//! the reference path; and the plain-Burn reference against the same module.
//!
//! Run with `--nocapture` to see the measured errors.

use burn::backend::wgpu::{CubeBackend, WgpuDevice, WgpuRuntime};
use burn::backend::{Autodiff, NdArray, Wgpu};
use burn::module::Param;
use burn::nn::{BatchNorm, BatchNormConfig};
use burn::tensor::activation::relu;
use burn::tensor::backend::Backend;
use burn::tensor::{DType, Tensor, TensorData};
use burnacc_kernels::batch_norm::{
    BatchNormKernel, batch_norm, batch_norm_backward_cube, batch_norm_backward_launches,
    batch_norm_backward_reference, batch_norm_forward_cube, batch_norm_forward_launches,
    batch_norm_reference,
};
use burnacc_tests::tolerance::{FUSED_F16_STORAGE, FUSED_F32_FORWARD, FUSED_F32_GRADIENT};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

// `Rows::tensor`: a tensor of the given dims holding f32 values.
use crate::common::Case as Rows;
use crate::common::{prim, rel_err, wrap};

type Cube = CubeBackend<WgpuRuntime, f32, i32, u32>;
type Ref = Autodiff<NdArray<f64>>;

const EPS: f64 = 1e-5;

/// Deterministic inputs of one case: `x` and `grad_out` `[N, C, ...]`, `gamma`, `beta` `[C]`.
struct Case {
    dims: Vec<usize>,
    x: Vec<f32>,
    gamma: Vec<f32>,
    beta: Vec<f32>,
    grad_out: Vec<f32>,
}

impl Case {
    /// Activations around `offset` with a spread of about one, as a convolution's output.
    fn new(dims: &[usize], offset: f32, seed: u64) -> Self {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut uniform = |n: usize, lo: f32, hi: f32| -> Vec<f32> {
            (0..n).map(|_| rng.random_range(lo..hi)).collect()
        };
        let numel = dims.iter().product();
        Self {
            dims: dims.to_vec(),
            x: uniform(numel, offset - 2.0, offset + 2.0),
            gamma: uniform(dims[1], 0.5, 1.5),
            beta: uniform(dims[1], -0.5, 0.5),
            grad_out: uniform(numel, -1.0, 1.0),
        }
    }
}

/// `burn::nn::BatchNorm` in training mode with the case's parameters: `(y, dx, dgamma, dbeta)`
/// for the loss `Σ grad_out · y` (with a ReLU after the norm when `relu`).
fn burn_batch_norm<const D: usize>(case: &Case, relu_after: bool) -> [TensorData; 4] {
    let cpu = Default::default();
    let channels = case.dims[1];
    let mut module: BatchNorm<Ref> = BatchNormConfig::new(channels).with_epsilon(EPS).init(&cpu);
    module.gamma = Param::from_tensor(Rows::tensor(&case.gamma, &[channels], &cpu));
    module.beta = Param::from_tensor(Rows::tensor(&case.beta, &[channels], &cpu));
    let x = Rows::tensor::<Ref, D>(&case.x, &case.dims, &cpu).require_grad();
    let mut y = module.forward(x.clone());
    if relu_after {
        y = relu(y);
    }
    let grad_out = Rows::tensor::<Ref, D>(&case.grad_out, &case.dims, &cpu);
    let grads = (y.clone() * grad_out).sum().backward();
    [
        y.into_data(),
        x.grad(&grads).expect("dx").into_data(),
        module.gamma.grad(&grads).expect("dgamma").into_data(),
        module.beta.grad(&grads).expect("dbeta").into_data(),
    ]
}

/// Relative errors `[y, dx, dgamma, dbeta]` of the fused kernels against `burn::nn::BatchNorm`,
/// the inputs stored on the device as `dtype`; `x` and `grad_out` are uploaded as `stored`
/// (a permutation of the case's shape) and seen through `swap_dims(1, 2)` when `strided`.
fn fused_errors<const D: usize>(case: &Case, dtype: DType, relu: bool, strided: bool) -> [f64; 4] {
    let device = WgpuDevice::default();
    let upload = |values: &[f32]| -> Tensor<Cube, D> {
        if strided {
            let mut stored = case.dims.clone();
            stored.swap(1, 2);
            let mut swapped = vec![0.0; values.len()];
            // The case's element (n, c, h, ...) lives at (n, h, c, ...) of the stored tensor.
            let (c_size, h_size) = (case.dims[1], case.dims[2]);
            let inner: usize = case.dims[3..].iter().product();
            for (i, &v) in values.iter().enumerate() {
                let rest = i % inner;
                let h = (i / inner) % h_size;
                let c = (i / (inner * h_size)) % c_size;
                let n = i / (inner * h_size * c_size);
                swapped[((n * h_size + h) * c_size + c) * inner + rest] = v;
            }
            Rows::tensor::<Cube, D>(&swapped, &stored, &device).swap_dims(1, 2)
        } else {
            Rows::tensor::<Cube, D>(values, &case.dims, &device)
        }
        .cast(dtype)
    };
    let channels = [case.dims[1]];
    let x = upload(&case.x);
    let grad_out = upload(&case.grad_out);
    let gamma = Rows::tensor::<Cube, 1>(&case.gamma, &channels, &device).cast(dtype);
    let beta = Rows::tensor::<Cube, 1>(&case.beta, &channels, &device).cast(dtype);

    let forward_before = batch_norm_forward_launches();
    let (y, mean, rstd) =
        batch_norm_forward_cube(prim(x.clone()), prim(gamma.clone()), prim(beta), EPS, relu);
    assert!(
        batch_norm_forward_launches() > forward_before,
        "the fused forward did not launch"
    );
    let backward_before = batch_norm_backward_launches();
    let relu_output = relu.then(|| y.clone());
    let (dx, dgamma, dbeta) = batch_norm_backward_cube(
        prim(x),
        prim(gamma),
        prim(grad_out),
        mean,
        rstd,
        relu_output,
    );
    assert!(
        batch_norm_backward_launches() > backward_before,
        "the fused backward did not launch"
    );

    let (y, dx) = (wrap::<Cube, D>(y), wrap::<Cube, D>(dx));
    let (dgamma, dbeta) = (wrap::<Cube, 1>(dgamma), wrap::<Cube, 1>(dbeta));
    for t in [y.dtype(), dx.dtype(), dgamma.dtype(), dbeta.dtype()] {
        assert_eq!(t, dtype, "outputs keep the input dtype");
    }
    assert_eq!(y.dims().to_vec(), case.dims);
    assert_eq!(dx.dims().to_vec(), case.dims);

    let [ry, rdx, rdgamma, rdbeta] = burn_batch_norm::<D>(case, relu);
    [
        rel_err(y.into_data(), ry),
        rel_err(dx.into_data(), rdx),
        rel_err(dgamma.into_data(), rdgamma),
        rel_err(dbeta.into_data(), rdbeta),
    ]
}

fn check_f32<const D: usize>(dims: [usize; D], offset: f32, relu: bool, strided: bool, seed: u64) {
    let case = Case::new(&dims, offset, seed);
    let [y, dx, dgamma, dbeta] = fused_errors::<D>(&case, DType::F32, relu, strided);
    println!(
        "f32 {dims:?} (offset {offset}, relu {relu}, strided {strided}): y {y:.2e}, dx {dx:.2e}, \
         dgamma {dgamma:.2e}, dbeta {dbeta:.2e}"
    );
    assert!(y <= FUSED_F32_FORWARD, "{dims:?}: forward error {y:e}");
    for (name, err) in [("dx", dx), ("dgamma", dgamma), ("dbeta", dbeta)] {
        assert!(err <= FUSED_F32_GRADIENT, "{dims:?}: {name} error {err:e}");
    }
}

/// Odd sizes, a convolution's rank.
#[test]
fn fused_f32_3x5x7x9() {
    check_f32([3, 5, 7, 9], 0.0, false, false, 1);
}

/// Rank 2 (`BatchNorm1d` over features): one element per sample and channel.
#[test]
fn fused_f32_rank2() {
    check_f32([33, 7], 0.0, false, false, 2);
}

/// Rank 3 (`BatchNorm1d` over a sequence).
#[test]
fn fused_f32_rank3() {
    check_f32([4, 3, 17], 0.0, false, false, 3);
}

/// Channels of 20,000 elements: each channel's sum is split over several cubes, then the runs
/// are added.
#[test]
fn fused_f32_split_channels() {
    check_f32([2, 3, 100, 100], 0.0, false, false, 4);
}

/// Activations centred far from zero (`|mean| ≫ std`): the shifted sums keep the variance.
#[test]
fn fused_f32_offset_mean() {
    check_f32([4, 6, 11, 13], 100.0, false, false, 5);
}

/// A fused ReLU, forward and backward (the gradient masked where the output is zero).
#[test]
fn fused_f32_relu() {
    check_f32([3, 5, 7, 9], 0.0, true, false, 6);
    check_f32([2, 3, 100, 100], 0.0, true, false, 7);
}

/// Non-contiguous `x` and `grad_out` (a `swap_dims` view) are read through their strides.
#[test]
fn fused_f32_strided() {
    check_f32([3, 5, 7, 9], 0.0, false, true, 8);
    check_f32([2, 4, 6, 5], 0.0, true, true, 9);
}

/// f16 storage (sums and statistics still in f32), on devices that support f16.
#[test]
fn fused_f16_storage() {
    let device = WgpuDevice::default();
    if !Cube::supports_dtype(&device, DType::F16) {
        println!("f16 storage: not supported by this device, skipped");
        return;
    }
    for (dims, seed) in [([3usize, 5, 7, 9], 11u64), ([2, 3, 100, 100], 12)] {
        // The reference is fed the f16-rounded inputs, so only the kernels' own error counts.
        let mut case = Case::new(&dims, 0.0, seed);
        for values in [
            &mut case.x,
            &mut case.gamma,
            &mut case.beta,
            &mut case.grad_out,
        ] {
            for v in values.iter_mut() {
                *v = burn::tensor::f16::from_f32(*v).to_f32();
            }
        }
        let [y, dx, dgamma, dbeta] = fused_errors::<4>(&case, DType::F16, false, false);
        println!("f16 {dims:?}: y {y:.2e}, dx {dx:.2e}, dgamma {dgamma:.2e}, dbeta {dbeta:.2e}");
        for (name, err) in [("y", y), ("dx", dx), ("dgamma", dgamma), ("dbeta", dbeta)] {
            assert!(
                err <= FUSED_F16_STORAGE,
                "f16 {dims:?}: {name} error {err:e}"
            );
        }
    }
}

/// An empty batch launches nothing and yields zero parameter gradients.
#[test]
fn fused_f32_empty_batch() {
    let device = WgpuDevice::default();
    let x = Tensor::<Cube, 4>::zeros([0, 3, 4, 4], &device);
    let gamma = Tensor::<Cube, 1>::ones([3], &device);
    let beta = Tensor::<Cube, 1>::zeros([3], &device);
    let (y, mean, rstd) =
        batch_norm_forward_cube(prim(x.clone()), prim(gamma.clone()), prim(beta), EPS, false);
    assert_eq!(wrap::<Cube, 4>(y).dims(), [0, 3, 4, 4]);
    let (dx, dgamma, dbeta) =
        batch_norm_backward_cube(prim(x.clone()), prim(gamma), prim(x), mean, rstd, None);
    assert_eq!(wrap::<Cube, 4>(dx).dims(), [0, 3, 4, 4]);
    for grad in [dgamma, dbeta] {
        let grad: Vec<f32> = wrap::<Cube, 1>(grad).into_data().to_vec().unwrap();
        assert_eq!(grad, vec![0.0; 3]);
    }
}

/// The plain-Burn reference agrees with `burn::nn::BatchNorm` forward and backward, with and
/// without a ReLU, to f64 precision.
#[test]
fn reference_matches_burn_batch_norm() {
    for relu_after in [false, true] {
        let case = Case::new(&[3, 4, 5, 6], 1.0, 31);
        let cpu = Default::default();
        let channels = [case.dims[1]];
        let x = Rows::tensor::<NdArray<f64>, 4>(&case.x, &case.dims, &cpu);
        let gamma = Rows::tensor::<NdArray<f64>, 1>(&case.gamma, &channels, &cpu);
        let beta = Rows::tensor::<NdArray<f64>, 1>(&case.beta, &channels, &cpu);
        let grad_out = Rows::tensor::<NdArray<f64>, 4>(&case.grad_out, &case.dims, &cpu);
        let (y, mean, rstd) = batch_norm_reference(x.clone(), gamma.clone(), beta, EPS, relu_after);
        let relu_output = relu_after.then(|| y.clone());
        let (dx, dgamma, dbeta) =
            batch_norm_backward_reference(x, gamma, grad_out, mean, rstd, relu_output);
        let expected = burn_batch_norm::<4>(&case, relu_after);
        for (name, actual, expected) in [
            ("y", y.into_data(), &expected[0]),
            ("dx", dx.into_data(), &expected[1]),
            ("dgamma", dgamma.into_data(), &expected[2]),
            ("dbeta", dbeta.into_data(), &expected[3]),
        ] {
            let err = rel_err(actual, expected.clone());
            assert!(
                err <= 1e-12,
                "reference {name} (relu {relu_after}): {err:e}"
            );
        }
    }
}

/// `batch_norm` on `Autodiff<B>`: `[y, dx, dgamma, dbeta, mean, var]` for the loss
/// `Σ grad_out · y`.
fn autodiff_batch_norm<B: BatchNormKernel, const D: usize>(
    case: &Case,
    relu: bool,
    device: &B::Device,
) -> [TensorData; 6] {
    let channels = [case.dims[1]];
    let x = Rows::tensor::<Autodiff<B>, D>(&case.x, &case.dims, device).require_grad();
    let gamma = Rows::tensor::<Autodiff<B>, 1>(&case.gamma, &channels, device).require_grad();
    let beta = Rows::tensor::<Autodiff<B>, 1>(&case.beta, &channels, device).require_grad();
    let grad_out = Rows::tensor::<Autodiff<B>, D>(&case.grad_out, &case.dims, device);
    let (y, mean, var) = batch_norm(x.clone(), gamma.clone(), beta.clone(), EPS, relu);
    let grads = (y.clone() * grad_out).sum().backward();
    [
        y.into_data(),
        x.grad(&grads).expect("dx").into_data(),
        gamma.grad(&grads).expect("dgamma").into_data(),
        beta.grad(&grads).expect("dbeta").into_data(),
        mean.into_data(),
        var.into_data(),
    ]
}

/// The batch's per-channel mean and biased variance, in f64.
fn channel_moments(case: &Case) -> [TensorData; 2] {
    let [n, c] = [case.dims[0], case.dims[1]];
    let spatial: usize = case.dims[2..].iter().product();
    let count = (n * spatial) as f64;
    let (mut mean, mut var) = (vec![0.0f64; c], vec![0.0f64; c]);
    for (i, &v) in case.x.iter().enumerate() {
        mean[(i / spatial) % c] += f64::from(v) / count;
    }
    for (i, &v) in case.x.iter().enumerate() {
        let channel = (i / spatial) % c;
        var[channel] += (f64::from(v) - mean[channel]).powi(2) / count;
    }
    [TensorData::new(mean, [c]), TensorData::new(var, [c])]
}

/// Checks `[y, dx, dgamma, dbeta, mean, var]` against `burn::nn::BatchNorm` and the moments.
fn check_autodiff(case: &Case, relu: bool, actual: [TensorData; 6], forward: f64, gradient: f64) {
    let [ry, rdx, rdgamma, rdbeta] = burn_batch_norm::<4>(case, relu);
    let [rmean, rvar] = channel_moments(case);
    let [y, dx, dgamma, dbeta, mean, var] = actual;
    for (name, actual, expected, bound) in [
        ("y", y, ry, forward),
        ("mean", mean, rmean, forward),
        ("var", var, rvar, forward),
        ("dx", dx, rdx, gradient),
        ("dgamma", dgamma, rdgamma, gradient),
        ("dbeta", dbeta, rdbeta, gradient),
    ] {
        let err = rel_err(actual, expected);
        println!("{:?} relu {relu}: {name} {err:.2e}", case.dims);
        assert!(
            err <= bound,
            "{:?} relu {relu}: {name} error {err:e}",
            case.dims
        );
    }
}

/// Under autodiff over Burn's fusion (`Wgpu`): one recorded custom op each way, running the
/// kernels, equal to `burn::nn::BatchNorm`.
#[test]
fn autodiff_over_fusion_matches_burn_batch_norm() {
    for relu in [false, true] {
        let case = Case::new(&[3, 5, 7, 9], 0.5, 41);
        let (forward_before, backward_before) = (
            batch_norm_forward_launches(),
            batch_norm_backward_launches(),
        );
        let actual = autodiff_batch_norm::<Wgpu, 4>(&case, relu, &WgpuDevice::default());
        assert!(
            batch_norm_forward_launches() > forward_before,
            "the fused forward did not launch"
        );
        assert!(
            batch_norm_backward_launches() > backward_before,
            "the fused backward did not launch"
        );
        check_autodiff(&case, relu, actual, FUSED_F32_FORWARD, FUSED_F32_GRADIENT);
    }
}

/// The reference path (a backend without the kernels) through the same autodiff node, in f64.
#[test]
fn autodiff_reference_path_matches_burn_batch_norm() {
    for relu in [false, true] {
        let case = Case::new(&[2, 4, 5, 3], -1.0, 42);
        let actual = autodiff_batch_norm::<NdArray<f64>, 4>(&case, relu, &Default::default());
        check_autodiff(&case, relu, actual, 1e-12, 1e-12);
    }
}
