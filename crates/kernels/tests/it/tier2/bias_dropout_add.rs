//! The fused CubeCL bias + dropout + residual add (wgpu) against the plain-Burn reference on
//! `NdArray<f64>` with the host mask; the kernels' mask against the host mask, bit for bit; the
//! reference backward against finite differences.
//!
//! Run with `--nocapture` to see the measured errors.

use burn::backend::wgpu::{CubeBackend, WgpuDevice, WgpuRuntime};
use burn::backend::{Flex, NdArray};
use burn::tensor::backend::Backend;
use burn::tensor::ops::IntTensor;
use burn::tensor::{DType, Tensor, TensorData};
use burnacc_kernels::bias_dropout_add::mask::{
    dropout_hash, dropout_keep, dropout_key, dropout_threshold, murmur3_x86_32,
};
use burnacc_kernels::bias_dropout_add::{
    BiasDropoutAddKernel, DropoutSeed, bias_dropout_add, bias_dropout_add_backward_launches,
    bias_dropout_add_backward_reference, bias_dropout_add_forward_launches,
    bias_dropout_add_inference, bias_dropout_add_reference, dropout_keep_mask,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

type Cube = CubeBackend<WgpuRuntime, f32, i32, u32>;
type Ref = NdArray<f64>;

use burnacc_tests::tolerance::{FUSED_F16_STORAGE, FUSED_F32_FORWARD, FUSED_F32_GRADIENT};

use crate::common::{prim, rel_err, wrap};

/// The seed tensor of a host `u64` on `device`, as the trait methods take it.
fn seed_prim<B: Backend>(seed: u64, device: &B::Device) -> Option<IntTensor<B>> {
    Some(
        DropoutSeed::from_u64(seed)
            .to_tensor::<B>(device)
            .into_primitive(),
    )
}

/// Deterministic inputs of one case, as f32 values (exactly representable in f64 too).
struct Case {
    dims: Vec<usize>,
    x: Vec<f32>,
    bias: Vec<f32>,
    residual: Vec<f32>,
    grad_out: Vec<f32>,
}

impl Case {
    fn new(dims: &[usize], seed: u64) -> Self {
        let mut rng = StdRng::seed_from_u64(seed);
        let numel: usize = dims.iter().product();
        let width = dims[dims.len() - 1];
        let mut uniform =
            |n: usize| -> Vec<f32> { (0..n).map(|_| rng.random_range(-1.0..1.0)).collect() };
        Self {
            dims: dims.to_vec(),
            x: uniform(numel),
            bias: uniform(width),
            residual: uniform(numel),
            grad_out: uniform(numel),
        }
    }

    fn tensor<B: Backend, const D: usize>(
        values: &[f32],
        dims: &[usize],
        device: &B::Device,
    ) -> Tensor<B, D> {
        Tensor::from_data(TensorData::new(values.to_vec(), dims.to_vec()), device)
    }

    /// `(x, bias, residual, grad_out)` on `device`.
    fn inputs<B: Backend, const D: usize>(
        &self,
        device: &B::Device,
    ) -> (Tensor<B, D>, Tensor<B, 1>, Tensor<B, D>, Tensor<B, D>) {
        let width = [self.dims[self.dims.len() - 1]];
        (
            Self::tensor(&self.x, &self.dims, device),
            Self::tensor(&self.bias, &width, device),
            Self::tensor(&self.residual, &self.dims, device),
            Self::tensor(&self.grad_out, &self.dims, device),
        )
    }
}

/// Relative errors `[y, dx, dbias]` of the fused path (inputs stored as `dtype`) against the
/// f64 reference; `dbias` is 0 without a bias. Asserts that the kernels launched.
fn fused_errors<const D: usize>(
    case: &Case,
    dtype: DType,
    with_bias: bool,
    p: f64,
    seed: u64,
) -> [f64; 3] {
    let device = WgpuDevice::default();
    let (x, bias, residual, grad_out) = case.inputs::<Cube, D>(&device);
    let (x, bias, residual, grad_out) = (
        x.cast(dtype),
        bias.cast(dtype),
        residual.cast(dtype),
        grad_out.cast(dtype),
    );
    let bias = with_bias.then(|| prim(bias));

    let forward_before = bias_dropout_add_forward_launches();
    let y = Cube::fused_bias_dropout_add(
        prim(x),
        bias,
        prim(residual),
        p,
        seed_prim::<Cube>(seed, &device),
    );
    assert!(
        bias_dropout_add_forward_launches() > forward_before,
        "the fused forward did not launch"
    );
    let backward_before = bias_dropout_add_backward_launches();
    let (dx, dbias) = Cube::fused_bias_dropout_add_backward(
        prim(grad_out),
        p,
        seed_prim::<Cube>(seed, &device),
        with_bias,
    );
    if with_bias || p > 0.0 {
        assert!(
            bias_dropout_add_backward_launches() > backward_before,
            "the fused backward did not launch"
        );
    }
    assert_eq!(dbias.is_some(), with_bias, "dbias only with a bias");

    let (y, dx) = (wrap::<Cube, D>(y), wrap::<Cube, D>(dx));
    assert_eq!(y.dtype(), dtype, "y keeps the input dtype");
    assert_eq!(dx.dtype(), dtype, "dx keeps the input dtype");
    assert_eq!(y.dims().to_vec(), case.dims);
    assert_eq!(dx.dims().to_vec(), case.dims);

    let cpu = Default::default();
    let (rx, rbias, rresidual, rgrad) = case.inputs::<Ref, D>(&cpu);
    let ry = bias_dropout_add_reference(rx, with_bias.then_some(rbias), rresidual, p, seed);
    let (rdx, rdbias) = bias_dropout_add_backward_reference(rgrad, p, seed, with_bias);

    let dbias_err = match (dbias, rdbias) {
        (Some(dbias), Some(rdbias)) => {
            let dbias = wrap::<Cube, 1>(dbias);
            assert_eq!(dbias.dtype(), dtype, "dbias keeps the input dtype");
            rel_err(dbias.into_data(), rdbias.into_data())
        }
        _ => 0.0,
    };
    [
        rel_err(y.into_data(), ry.into_data()),
        rel_err(dx.into_data(), rdx.into_data()),
        dbias_err,
    ]
}

/// Every combination of p ∈ {0, 0.1, 0.5} and bias present/absent on one f32 shape.
fn check_f32<const D: usize>(dims: [usize; D], seed: u64) {
    let case = Case::new(&dims, seed);
    for p in [0.0, 0.1, 0.5] {
        for with_bias in [true, false] {
            let [y, dx, dbias] = fused_errors::<D>(&case, DType::F32, with_bias, p, seed + 1000);
            println!(
                "f32 {dims:?} p {p} bias {with_bias}: y {y:.2e}, dx {dx:.2e}, dbias {dbias:.2e}"
            );
            let what = format!("{dims:?} p {p} bias {with_bias}");
            assert!(y <= FUSED_F32_FORWARD, "{what}: forward error {y:e}");
            assert!(dx <= FUSED_F32_FORWARD, "{what}: dx error {dx:e}");
            assert!(dbias <= FUSED_F32_GRADIENT, "{what}: dbias error {dbias:e}");
        }
    }
}

#[test]
fn fused_f32_1x7() {
    check_f32([1, 7], 1);
}

#[test]
fn fused_f32_3x768() {
    check_f32([3, 768], 2);
}

#[test]
fn fused_f32_5x1023() {
    check_f32([5, 1023], 3);
}

#[test]
fn fused_f32_2x3x1024() {
    check_f32([2, 3, 1024], 4);
}

/// Many short rows: more rows than one dbias block sums, so the two-stage column reduction
/// runs with several blocks.
#[test]
fn fused_f32_4097x7() {
    check_f32([4097, 7], 5);
}

/// f16 storage (computed in f32), on devices that support f16.
#[test]
fn fused_f16_storage() {
    let device = WgpuDevice::default();
    if !Cube::supports_dtype(&device, DType::F16) {
        println!("f16 storage: not supported by this device, skipped");
        return;
    }
    for (dims, seed) in [
        ([3usize, 768usize], 11u64),
        ([4097, 7], 12),
        ([5, 1023], 13),
    ] {
        let case = Case::new(&dims, seed);
        for (p, with_bias) in [(0.1, true), (0.5, false), (0.0, true)] {
            let [y, dx, dbias] = fused_errors::<2>(&case, DType::F16, with_bias, p, seed);
            println!(
                "f16 {dims:?} p {p} bias {with_bias}: y {y:.2e}, dx {dx:.2e}, dbias {dbias:.2e}"
            );
            for (name, err) in [("y", y), ("dx", dx), ("dbias", dbias)] {
                assert!(
                    err <= FUSED_F16_STORAGE,
                    "f16 {dims:?} p {p}: {name} error {err:e}"
                );
            }
        }
    }
}

/// Strided (transposed) inputs are made contiguous by the launchers, not misread; the mask
/// follows the logical row-major index, not the storage order.
#[test]
fn fused_f32_strided_inputs() {
    // Values stored as `[48, 5]` and used through their transposed views `[5, 48]`.
    let case = Case::new(&[48, 5], 21);
    let (p, seed) = (0.3, 77);
    let device = WgpuDevice::default();
    let (x, _, residual, grad_out) = case.inputs::<Cube, 2>(&device);
    let bias = Case::tensor::<Cube, 1>(&case.x[..48], &[48], &device);
    let before = bias_dropout_add_forward_launches();
    let y = bias_dropout_add(x.transpose(), Some(bias), residual.transpose(), p, seed);
    assert!(bias_dropout_add_forward_launches() > before);
    let before = bias_dropout_add_backward_launches();
    let (dx, dbias) = Cube::fused_bias_dropout_add_backward(
        prim(grad_out.transpose()),
        p,
        seed_prim::<Cube>(seed, &device),
        true,
    );
    assert!(bias_dropout_add_backward_launches() > before);

    let cpu = Default::default();
    let (rx, _, rresidual, rgrad) = case.inputs::<Ref, 2>(&cpu);
    let rbias = Case::tensor::<Ref, 1>(&case.x[..48], &[48], &cpu);
    let ry =
        bias_dropout_add_reference(rx.transpose(), Some(rbias), rresidual.transpose(), p, seed);
    let (rdx, rdbias) = bias_dropout_add_backward_reference(rgrad.transpose(), p, seed, true);
    let errs = [
        rel_err(y.into_data(), ry.into_data()),
        rel_err(wrap::<Cube, 2>(dx).into_data(), rdx.into_data()),
        rel_err(
            wrap::<Cube, 1>(dbias.unwrap()).into_data(),
            rdbias.unwrap().into_data(),
        ),
    ];
    println!(
        "f32 strided [5, 48]: y {:.2e}, dx {:.2e}, dbias {:.2e}",
        errs[0], errs[1], errs[2]
    );
    assert!(errs[0] <= FUSED_F32_FORWARD && errs[1] <= FUSED_F32_FORWARD);
    assert!(errs[2] <= FUSED_F32_GRADIENT);
}

/// An empty batch launches nothing, keeps its shape, and yields a zero bias gradient.
#[test]
fn fused_f32_empty_batch() {
    let device = WgpuDevice::default();
    let x = Tensor::<Cube, 3>::zeros([0, 4, 8], &device);
    let bias = Tensor::<Cube, 1>::ones([8], &device);
    let y = bias_dropout_add(x.clone(), Some(bias), x.clone(), 0.5, 3);
    assert_eq!(y.dims(), [0, 4, 8]);
    for with_bias in [true, false] {
        let (dx, dbias) = Cube::fused_bias_dropout_add_backward(
            prim(x.clone()),
            0.5,
            seed_prim::<Cube>(3, &device),
            with_bias,
        );
        assert_eq!(wrap::<Cube, 3>(dx).dims(), [0, 4, 8]);
        if let Some(dbias) = dbias {
            let dbias: Vec<f32> = wrap::<Cube, 1>(dbias).into_data().to_vec().unwrap();
            assert_eq!(dbias, vec![0.0; 8]);
        }
    }
}

/// The mask the kernels apply (read back from `y` with `x = 1`, no bias, `residual = 0`, and
/// from `dx` with `dy = 1`, through both backward kernels) equals the host mask exactly, and
/// kept values equal the f32 scale exactly.
#[test]
fn kernel_mask_equals_host_mask() {
    let device = WgpuDevice::default();
    let dims = [317usize, 331usize]; // 104 927 elements, odd sizes
    let numel = dims[0] * dims[1];
    let ones = Tensor::<Cube, 2>::ones(dims, &device);
    let zeros = Tensor::<Cube, 2>::zeros(dims, &device);
    for (p, seed) in [
        (0.1, 0u64),
        (0.5, 1),
        (0.5, 0xdead_beef_0000_0001),
        (0.9, 42),
        (0.01, u64::MAX),
    ] {
        let host = dropout_keep_mask(seed, p, &dims);
        let scale = (1.0 / (1.0 - p)) as f32;
        let y = bias_dropout_add(ones.clone(), None, zeros.clone(), p, seed);
        let seed_tensor = || seed_prim::<Cube>(seed, &device);
        let (dx, _) =
            Cube::fused_bias_dropout_add_backward(prim(ones.clone()), p, seed_tensor(), false);
        let (dx_columns, _) =
            Cube::fused_bias_dropout_add_backward(prim(ones.clone()), p, seed_tensor(), true);
        for (name, t) in [
            ("forward", y),
            ("backward dx", wrap(dx)),
            ("backward dx + dbias", wrap(dx_columns)),
        ] {
            let values: Vec<f32> = t.into_data().to_vec().unwrap();
            let mismatches = values
                .iter()
                .zip(&host)
                .filter(|&(&v, &keep)| v != if keep { scale } else { 0.0 })
                .count();
            assert_eq!(mismatches, 0, "{name}, p {p}, seed {seed:#x}: mask differs");
        }

        // The kept fraction is 1 − p within 5 standard deviations of a Bernoulli mean.
        let kept = host.iter().filter(|&&k| k).count() as f64 / numel as f64;
        let sigma = (p * (1.0 - p) / numel as f64).sqrt();
        println!(
            "p {p}, seed {seed:#x}: kept {kept:.5} (expected {:.5})",
            1.0 - p
        );
        assert!(
            (kept - (1.0 - p)).abs() <= 5.0 * sigma,
            "p {p}, seed {seed:#x}: kept fraction {kept} vs {}",
            1.0 - p
        );
    }
}

/// Different seeds, including seeds differing only in their high or low 32 bits, and
/// neighbouring seeds, give different (and uncorrelated) masks.
#[test]
fn different_seeds_give_different_masks() {
    let dims = [100_000usize];
    let p = 0.5;
    let seeds = [0u64, 1, 2, 1 << 32, (1 << 32) + 1, 0xffff_ffff, u64::MAX];
    let masks: Vec<Vec<bool>> = seeds
        .iter()
        .map(|&s| dropout_keep_mask(s, p, &dims))
        .collect();
    for i in 0..seeds.len() {
        for j in i + 1..seeds.len() {
            let agree = masks[i]
                .iter()
                .zip(&masks[j])
                .filter(|(a, b)| a == b)
                .count() as f64
                / dims[0] as f64;
            // Independent masks agree on p² + (1 − p)² = 1/2 of the elements.
            assert!(
                (agree - 0.5).abs() < 0.01,
                "seeds {:#x} and {:#x} agree on {agree}",
                seeds[i],
                seeds[j]
            );
        }
    }
    // Neighbouring elements are uncorrelated too: P(keep[i] = keep[i + 1]) ≈ 1/2.
    let mask = &masks[1];
    let agree = mask.windows(2).filter(|w| w[0] == w[1]).count() as f64 / (dims[0] - 1) as f64;
    assert!((agree - 0.5).abs() < 0.01, "neighbours agree on {agree}");
}

/// The host hash is MurmurHash3_x86_32: published test vectors of the reference
/// implementation (SMHasher's `MurmurHash3.cpp`), and the 12-byte message layout.
#[test]
fn host_hash_is_murmur3() {
    assert_eq!(murmur3_x86_32(0, &[]), 0);
    assert_eq!(murmur3_x86_32(1, &[]), 0x514e_28b7);
    assert_eq!(murmur3_x86_32(0xffff_ffff, &[]), 0x81f1_6f39);
    assert_eq!(murmur3_x86_32(0, &[0]), 0x2362_f9de);
    assert_eq!(murmur3_x86_32(0, &[0xffff_ffff]), 0x7629_3b50);
    assert_eq!(murmur3_x86_32(0, &[0x8765_4321]), 0xf55b_516b);
    assert_eq!(murmur3_x86_32(0x5082_edee, &[0x8765_4321]), 0x2362_f9de);
    // "aaaa" with seed 0x9747b28c.
    assert_eq!(murmur3_x86_32(0x9747_b28c, &[0x6161_6161]), 0x5a97_808a);

    let (seed, index) = (0x0123_4567_89ab_cdefu64, 12_345u32);
    let [w0, w1] = DropoutSeed::from_u64(seed).words();
    let words = [w0, w1, index];
    assert_eq!(
        dropout_hash(dropout_key(seed), index),
        murmur3_x86_32(0, &words)
    );
    assert_eq!(dropout_threshold(0.0), 0);
    assert_eq!(dropout_threshold(0.5), 1 << 31);
    assert!(dropout_keep(seed, 0.0, index), "p = 0 keeps everything");
}

/// The inference form is `residual + x + bias` on the kernels, whatever the seed.
#[test]
fn inference_form_has_no_dropout() {
    let case = Case::new(&[6, 50], 31);
    let device = WgpuDevice::default();
    let (x, bias, residual, _) = case.inputs::<Cube, 2>(&device);
    let before = bias_dropout_add_forward_launches();
    let y = bias_dropout_add_inference(x, Some(bias), residual);
    assert!(bias_dropout_add_forward_launches() > before);
    let cpu = Default::default();
    let (rx, rbias, rresidual, _) = case.inputs::<Ref, 2>(&cpu);
    let expected = rresidual + rx + rbias.unsqueeze::<2>();
    let err = rel_err(y.into_data(), expected.into_data());
    assert!(err <= FUSED_F32_FORWARD, "inference error {err:e}");
}

/// The CPU backends take the reference path through the same API: NdArray exactly, Flex with
/// f16 storage computed in f32.
#[test]
fn fallback_path_matches_reference() {
    let case = Case::new(&[3, 10], 41);
    let (p, seed) = (0.25, 9);
    let cpu = Default::default();
    let (x, bias, residual, grad) = case.inputs::<Ref, 2>(&cpu);
    let y = bias_dropout_add(x.clone(), Some(bias.clone()), residual.clone(), p, seed);
    let expected = bias_dropout_add_reference(x, Some(bias), residual, p, seed);
    assert!(rel_err(y.into_data(), expected.clone().into_data()) <= 1e-15);
    let (dx, dbias) = Ref::fused_bias_dropout_add_backward(
        prim(grad.clone()),
        p,
        seed_prim::<Ref>(seed, &cpu),
        true,
    );
    let (rdx, rdbias) = bias_dropout_add_backward_reference(grad, p, seed, true);
    assert!(rel_err(wrap::<Ref, 2>(dx).into_data(), rdx.clone().into_data()) <= 1e-15);
    assert!(
        rel_err(
            wrap::<Ref, 1>(dbias.unwrap()).into_data(),
            rdbias.unwrap().into_data()
        ) <= 1e-15
    );

    let flex = Default::default();
    let (x, bias, residual, grad) = case.inputs::<Flex, 2>(&flex);
    let half = |t: Tensor<Flex, 2>| t.cast(DType::F16);
    let y = bias_dropout_add(
        half(x),
        Some(bias.cast(DType::F16)),
        half(residual),
        p,
        seed,
    );
    assert_eq!(y.dtype(), DType::F16);
    let err = rel_err(y.into_data(), expected.into_data());
    assert!(err <= FUSED_F16_STORAGE, "Flex f16 forward error {err:e}");
    let (dx, _) = Flex::fused_bias_dropout_add_backward(
        prim(half(grad)),
        p,
        seed_prim::<Flex>(seed, &flex),
        true,
    );
    let err = rel_err(wrap::<Flex, 2>(dx).into_data(), rdx.into_data());
    assert!(err <= FUSED_F16_STORAGE, "Flex f16 dx error {err:e}");
}

/// Central finite differences of `L = Σ y · w` (so `grad_out = w`) through the reference
/// forward, in f64 with the mask fixed by the seed, against the reference backward
/// (`d_residual = w`, `dx`, `dbias`).
#[test]
fn reference_backward_matches_finite_differences() {
    let dims = [3usize, 5usize];
    let (p, seed) = (0.4, 1234);
    let case = Case::new(&dims, 51);
    let cpu = Default::default();
    let width = [dims[1]];
    let to_f64 = |v: &[f32]| v.iter().map(|&e| e as f64).collect::<Vec<f64>>();
    let base = [to_f64(&case.x), to_f64(&case.residual), to_f64(&case.bias)];
    let w = to_f64(&case.grad_out);
    let loss = |v: &[Vec<f64>; 3]| -> f64 {
        let x = Tensor::<Ref, 2>::from_data(TensorData::new(v[0].clone(), dims), &cpu);
        let residual = Tensor::<Ref, 2>::from_data(TensorData::new(v[1].clone(), dims), &cpu);
        let bias = Tensor::<Ref, 1>::from_data(TensorData::new(v[2].clone(), width), &cpu);
        let w = Tensor::<Ref, 2>::from_data(TensorData::new(w.clone(), dims), &cpu);
        (bias_dropout_add_reference(x, Some(bias), residual, p, seed) * w)
            .sum()
            .into_scalar()
    };
    let numeric = |which: usize| -> Vec<f64> {
        let h = 1e-6;
        (0..base[which].len())
            .map(|i| {
                let (mut plus, mut minus) = (base.clone(), base.clone());
                plus[which][i] += h;
                minus[which][i] -= h;
                (loss(&plus) - loss(&minus)) / (2.0 * h)
            })
            .collect()
    };

    let wt = Tensor::<Ref, 2>::from_data(TensorData::new(w.clone(), dims), &cpu);
    let (dx, dbias) = bias_dropout_add_backward_reference(wt.clone(), p, seed, true);
    for (name, analytic, which) in [
        ("dx", dx.into_data(), 0),
        ("d_residual", wt.into_data(), 1),
        ("dbias", dbias.unwrap().into_data(), 2),
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
