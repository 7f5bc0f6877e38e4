//! The fused CubeCL LayerNorm (wgpu) against the plain-Burn reference on `NdArray<f64>`, and
//! the reference backward against finite differences of the reference forward.
//!
//! Run with `--nocapture` to see the measured errors.

use burn::backend::NdArray;
use burn::backend::wgpu::{CubeBackend, WgpuDevice, WgpuRuntime};
use burn::nn::LayerNormConfig;
use burn::tensor::backend::Backend;
use burn::tensor::{DType, Tensor, TensorData};
use burnacc_kernels::layer_norm::{
    LayerNormKernel, layer_norm, layer_norm_backward_launches, layer_norm_backward_reference,
    layer_norm_forward_launches, layer_norm_reference,
};

type Cube = CubeBackend<WgpuRuntime, f32, i32, u32>;
type Ref = NdArray<f64>;

use burnacc_tests::tolerance::{FUSED_F16_STORAGE, FUSED_F32_FORWARD, FUSED_F32_GRADIENT};

use crate::common::*;

/// Relative errors `[y, dx, dgamma, dbeta]` of the fused path against the f64 reference, with
/// the inputs stored on the device as `dtype`.
fn fused_errors<const D: usize>(case: &Case, dtype: DType) -> [f64; 4] {
    let device = WgpuDevice::default();
    let (x, gamma, beta, grad_out) = case.inputs::<Cube, D>(&device);
    let (x, gamma, beta, grad_out) = (
        x.cast(dtype),
        gamma.cast(dtype),
        beta.cast(dtype),
        grad_out.cast(dtype),
    );

    let forward_before = layer_norm_forward_launches();
    let (y, mean, rstd) =
        Cube::fused_layer_norm_with_stats(prim(x.clone()), prim(gamma.clone()), prim(beta), EPS);
    assert!(
        layer_norm_forward_launches() > forward_before,
        "the fused forward did not launch"
    );
    let backward_before = layer_norm_backward_launches();
    let (dx, dgamma, dbeta) =
        Cube::fused_layer_norm_backward(prim(x), prim(gamma), prim(grad_out), mean, rstd);
    assert!(
        layer_norm_backward_launches() > backward_before,
        "the fused backward did not launch"
    );

    let y = wrap::<Cube, D>(y);
    let dx = wrap::<Cube, D>(dx);
    let (dgamma, dbeta) = (wrap::<Cube, 1>(dgamma), wrap::<Cube, 1>(dbeta));
    for t in [y.dtype(), dx.dtype(), dgamma.dtype(), dbeta.dtype()] {
        assert_eq!(t, dtype, "outputs keep the input dtype");
    }
    assert_eq!(y.dims().to_vec(), case.dims);
    assert_eq!(dx.dims().to_vec(), case.dims);

    let cpu = Default::default();
    let (rx, rgamma, rbeta, rgrad) = case.inputs::<Ref, D>(&cpu);
    let ry = layer_norm_reference(rx.clone(), rgamma.clone(), rbeta, EPS);
    let (rdx, rdgamma, rdbeta) = layer_norm_backward_reference(rx, rgamma, rgrad, EPS);

    [
        rel_err(y.into_data(), ry.into_data()),
        rel_err(dx.into_data(), rdx.into_data()),
        rel_err(dgamma.into_data(), rdgamma.into_data()),
        rel_err(dbeta.into_data(), rdbeta.into_data()),
    ]
}

fn check_f32<const D: usize>(dims: [usize; D], seed: u64) {
    let case = Case::new(&dims, seed);
    let [y, dx, dgamma, dbeta] = fused_errors::<D>(&case, DType::F32);
    println!("f32 {dims:?}: y {y:.2e}, dx {dx:.2e}, dgamma {dgamma:.2e}, dbeta {dbeta:.2e}");
    assert!(y <= FUSED_F32_FORWARD, "{dims:?}: forward error {y:e}");
    for (name, err) in [("dx", dx), ("dgamma", dgamma), ("dbeta", dbeta)] {
        assert!(err <= FUSED_F32_GRADIENT, "{dims:?}: {name} error {err:e}");
    }
}

#[test]
fn fused_f32_1x7() {
    check_f32([1, 7], 1);
}

#[test]
fn fused_f32_7x33() {
    check_f32([7, 33], 2);
}

#[test]
fn fused_f32_33x768() {
    check_f32([33, 768], 3);
}

#[test]
fn fused_f32_5x127() {
    check_f32([5, 127], 4);
}

#[test]
fn fused_f32_3x4097() {
    check_f32([3, 4097], 5);
}

#[test]
fn fused_f32_2x3x1024() {
    check_f32([2, 3, 1024], 6);
}

/// Many short rows: more rows than one dgamma/dbeta block sums, so the two-stage column
/// reduction runs with several blocks.
#[test]
fn fused_f32_4097x7() {
    check_f32([4097, 7], 7);
}

/// f16 storage (statistics still in f32), on devices that support f16.
#[test]
fn fused_f16_storage() {
    let device = WgpuDevice::default();
    if !Cube::supports_dtype(&device, DType::F16) {
        println!("f16 storage: not supported by this device, skipped");
        return;
    }
    for (dims, seed) in [([7usize, 33usize], 11u64), ([33, 768], 12), ([3, 4097], 13)] {
        let case = Case::new(&dims, seed);
        let [y, dx, dgamma, dbeta] = fused_errors::<2>(&case, DType::F16);
        println!("f16 {dims:?}: y {y:.2e}, dx {dx:.2e}, dgamma {dgamma:.2e}, dbeta {dbeta:.2e}");
        for (name, err) in [("y", y), ("dx", dx), ("dgamma", dgamma), ("dbeta", dbeta)] {
            assert!(
                err <= FUSED_F16_STORAGE,
                "f16 {dims:?}: {name} error {err:e}"
            );
        }
    }
}

/// A strided (transposed) input is made contiguous by the launcher, not misread.
#[test]
fn fused_f32_strided_input() {
    // `x` is stored as `[48, 5]` and normalized as its transposed view `[5, 48]`.
    let case = Case::new(&[5, 48], 21);
    let stored = [48usize, 5usize];
    let device = WgpuDevice::default();
    let (_, gamma, beta, _) = case.inputs::<Cube, 2>(&device);
    let x = Case::tensor::<Cube, 2>(&case.x, &stored, &device).transpose();
    let before = layer_norm_forward_launches();
    let fused = layer_norm(x, gamma, beta, EPS);
    assert!(
        layer_norm_forward_launches() > before,
        "the fused forward did not launch"
    );

    let cpu = Default::default();
    let (_, rgamma, rbeta, _) = case.inputs::<Ref, 2>(&cpu);
    let rx = Case::tensor::<Ref, 2>(&case.x, &stored, &cpu).transpose();
    let expected = layer_norm_reference(rx, rgamma, rbeta, EPS);
    let err = rel_err(fused.into_data(), expected.into_data());
    println!("f32 strided [5, 48]: y {err:.2e}");
    assert!(err <= FUSED_F32_FORWARD, "strided forward error {err:e}");
}

/// An empty batch launches nothing and yields zero parameter gradients.
#[test]
fn fused_f32_empty_batch() {
    let device = WgpuDevice::default();
    let x = Tensor::<Cube, 3>::zeros([0, 4, 8], &device);
    let gamma = Tensor::<Cube, 1>::ones([8], &device);
    let beta = Tensor::<Cube, 1>::zeros([8], &device);
    let (y, mean, rstd) =
        Cube::fused_layer_norm_with_stats(prim(x.clone()), prim(gamma.clone()), prim(beta), EPS);
    assert_eq!(wrap::<Cube, 3>(y).dims(), [0, 4, 8]);
    let (dx, dgamma, dbeta) =
        Cube::fused_layer_norm_backward(prim(x.clone()), prim(gamma), prim(x), mean, rstd);
    assert_eq!(wrap::<Cube, 3>(dx).dims(), [0, 4, 8]);
    for grad in [dgamma, dbeta] {
        let grad: Vec<f32> = wrap::<Cube, 1>(grad).into_data().to_vec().unwrap();
        assert_eq!(grad, vec![0.0; 8]);
    }
}

/// The reference agrees with `burn::nn::LayerNorm` (which runs Burn's `layer_norm` op).
#[test]
fn reference_matches_burn_layer_norm() {
    let case = Case::new(&[4, 9], 31);
    let cpu = Default::default();
    let (x, gamma, beta, _) = case.inputs::<Ref, 2>(&cpu);
    let mut module = LayerNormConfig::new(9).with_epsilon(EPS).init::<Ref>(&cpu);
    module.gamma = module.gamma.map(|_| gamma.clone());
    module.beta = module.beta.map(|b| b.map(|_| beta.clone()));
    let expected = module.forward(x.clone());
    let actual = layer_norm_reference(x, gamma, beta, EPS);
    let err = rel_err(actual.into_data(), expected.into_data());
    assert!(err <= 1e-12, "reference vs burn::nn::LayerNorm: {err:e}");
}

/// The CPU backends take the reference path through the same API.
#[test]
fn fallback_path_matches_reference() {
    let case = Case::new(&[3, 10], 41);
    let cpu = Default::default();
    let (x, gamma, beta, grad) = case.inputs::<Ref, 2>(&cpu);
    let y = layer_norm(x.clone(), gamma.clone(), beta.clone(), EPS);
    let expected = layer_norm_reference(x.clone(), gamma.clone(), beta.clone(), EPS);
    assert!(rel_err(y.into_data(), expected.into_data()) <= 1e-12);

    let (_, mean, rstd) =
        Ref::fused_layer_norm_with_stats(prim(x.clone()), prim(gamma.clone()), prim(beta), EPS);
    let (dx, dgamma, dbeta) = Ref::fused_layer_norm_backward(
        prim(x.clone()),
        prim(gamma.clone()),
        prim(grad.clone()),
        mean,
        rstd,
    );
    let (rdx, rdgamma, rdbeta) = layer_norm_backward_reference(x, gamma, grad, EPS);
    assert!(rel_err(wrap::<Ref, 2>(dx).into_data(), rdx.into_data()) <= 1e-12);
    assert!(rel_err(wrap::<Ref, 1>(dgamma).into_data(), rdgamma.into_data()) <= 1e-12);
    assert!(rel_err(wrap::<Ref, 1>(dbeta).into_data(), rdbeta.into_data()) <= 1e-12);
}

/// Central finite differences of `L = Σ y · w` (so `grad_out = w`) through the reference
/// forward, in f64, against the analytic reference backward.
#[test]
fn reference_backward_matches_finite_differences() {
    let dims = [3usize, 5usize];
    let case = Case::new(&dims, 51);
    let cpu = Default::default();
    let width = [dims[1]];
    let to_f64 = |v: &[f32]| v.iter().map(|&e| e as f64).collect::<Vec<f64>>();
    let (x, gamma, beta, w) = (
        to_f64(&case.x),
        to_f64(&case.gamma),
        to_f64(&case.beta),
        to_f64(&case.grad_out),
    );
    let loss = |x: &[f64], gamma: &[f64], beta: &[f64]| -> f64 {
        let x = Tensor::<Ref, 2>::from_data(TensorData::new(x.to_vec(), dims), &cpu);
        let gamma = Tensor::<Ref, 1>::from_data(TensorData::new(gamma.to_vec(), width), &cpu);
        let beta = Tensor::<Ref, 1>::from_data(TensorData::new(beta.to_vec(), width), &cpu);
        let w = Tensor::<Ref, 2>::from_data(TensorData::new(w.clone(), dims), &cpu);
        (layer_norm_reference(x, gamma, beta, EPS) * w)
            .sum()
            .into_scalar()
    };
    let numeric = |which: usize| -> Vec<f64> {
        let h = 1e-6;
        let base = [x.clone(), gamma.clone(), beta.clone()];
        (0..base[which].len())
            .map(|i| {
                let (mut plus, mut minus) = (base.clone(), base.clone());
                plus[which][i] += h;
                minus[which][i] -= h;
                (loss(&plus[0], &plus[1], &plus[2]) - loss(&minus[0], &minus[1], &minus[2]))
                    / (2.0 * h)
            })
            .collect()
    };

    let (xt, gammat, _, wt) = case.inputs::<Ref, 2>(&cpu);
    let (dx, dgamma, dbeta) = layer_norm_backward_reference(xt, gammat, wt, EPS);
    for (name, analytic, which) in [
        ("dx", dx.into_data(), 0),
        ("dgamma", dgamma.into_data(), 1),
        ("dbeta", dbeta.into_data(), 2),
    ] {
        let numeric = numeric(which);
        let shape = vec![numeric.len()];
        let err = rel_err(analytic, TensorData::new(numeric, shape));
        println!("finite differences {name}: {err:.2e}");
        assert!(
            err <= 1e-6,
            "{name}: analytic vs finite differences {err:e}"
        );
    }
}
