//! The fused CubeCL GELUs (wgpu) against the plain-Burn references on `NdArray<f64>`, and the
//! reference backwards against finite differences of the reference forwards.
//!
//! Inputs span `[-6, 6]` (plus a bias in `[-1, 1]`), so both tails of the activations, where
//! `exp` saturates and `erf` approaches ±1, are exercised. Run with `--nocapture` to see the
//! measured errors.

use burn::backend::NdArray;
use burn::backend::wgpu::{CubeBackend, WgpuDevice, WgpuRuntime};
use burn::tensor::backend::Backend;
use burn::tensor::{DType, Tensor, TensorData};
use burnacc_kernels::gelu::{
    GeluKernel, bias_gelu, bias_gelu_backward_launches, bias_gelu_backward_reference,
    bias_gelu_forward_launches, bias_gelu_reference, quick_gelu, quick_gelu_backward_launches,
    quick_gelu_backward_reference, quick_gelu_forward_launches, quick_gelu_reference,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

type Cube = CubeBackend<WgpuRuntime, f32, i32, u32>;
type Ref = NdArray<f64>;

use burnacc_tests::tolerance::{FUSED_ELEMENTWISE_F16, FUSED_ELEMENTWISE_F32};

use crate::common::{prim, rel_err, wrap};

fn values(n: usize, seed: u64, lo: f32, hi: f32) -> Vec<f32> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..n).map(|_| rng.random_range(lo..hi)).collect()
}

fn tensor<B: Backend, const D: usize>(
    v: &[f32],
    dims: &[usize],
    device: &B::Device,
) -> Tensor<B, D> {
    Tensor::from_data(TensorData::new(v.to_vec(), dims.to_vec()), device)
}

/// Deterministic `x: dims`, `bias: [width]`, `grad_out: dims`.
struct Case {
    dims: Vec<usize>,
    x: Vec<f32>,
    bias: Vec<f32>,
    grad_out: Vec<f32>,
}

impl Case {
    fn new(dims: &[usize], seed: u64) -> Self {
        let numel = dims.iter().product();
        let width = dims[dims.len() - 1];
        Self {
            dims: dims.to_vec(),
            x: values(numel, seed, -6.0, 6.0),
            bias: values(width, seed + 1000, -1.0, 1.0),
            grad_out: values(numel, seed + 2000, -1.0, 1.0),
        }
    }

    fn inputs<B: Backend, const D: usize>(
        &self,
        device: &B::Device,
    ) -> (Tensor<B, D>, Tensor<B, 1>, Tensor<B, D>) {
        let width = [self.dims[self.dims.len() - 1]];
        (
            tensor(&self.x, &self.dims, device),
            tensor(&self.bias, &width, device),
            tensor(&self.grad_out, &self.dims, device),
        )
    }

    /// The same case with every value rounded to `dtype` and back, so that a reference fed with
    /// it sees exactly what the device stores.
    fn rounded(&self, dtype: DType) -> Self {
        let device = WgpuDevice::default();
        let round = |v: &[f32], dims: &[usize]| -> Vec<f32> {
            tensor::<Cube, 1>(v, &[dims.iter().product()], &device)
                .cast(dtype)
                .cast(DType::F32)
                .into_data()
                .to_vec()
                .unwrap()
        };
        let width = [self.dims[self.dims.len() - 1]];
        Self {
            dims: self.dims.clone(),
            x: round(&self.x, &self.dims),
            bias: round(&self.bias, &width),
            grad_out: round(&self.grad_out, &self.dims),
        }
    }
}

/// Relative errors of the fused kernels against the f64 reference, with the inputs stored on
/// the device as `dtype`: `[quick y, quick dx, gelu y, gelu dx, bias y, bias dx, dbias]`. Panics
/// unless every launch counter increased and every output keeps the shape and dtype of `x`.
fn fused_errors<const D: usize>(case: &Case, dtype: DType) -> [f64; 7] {
    let device = WgpuDevice::default();
    let (x, bias, dy) = case.inputs::<Cube, D>(&device);
    let (x, bias, dy) = (x.cast(dtype), bias.cast(dtype), dy.cast(dtype));
    let before = [
        quick_gelu_forward_launches(),
        quick_gelu_backward_launches(),
        bias_gelu_forward_launches(),
        bias_gelu_backward_launches(),
    ];

    let q_y = wrap::<Cube, D>(Cube::fused_quick_gelu(prim(x.clone())));
    let q_dx = wrap::<Cube, D>(Cube::fused_quick_gelu_backward(
        prim(x.clone()),
        prim(dy.clone()),
    ));
    let g_y = wrap::<Cube, D>(Cube::fused_bias_gelu(prim(x.clone()), None));
    let (g_dx, none) = Cube::fused_bias_gelu_backward(prim(x.clone()), None, prim(dy.clone()));
    assert!(none.is_none(), "no bias, no bias gradient");
    let g_dx = wrap::<Cube, D>(g_dx);
    let b_y = wrap::<Cube, D>(Cube::fused_bias_gelu(
        prim(x.clone()),
        Some(prim(bias.clone())),
    ));
    let (b_dx, dbias) = Cube::fused_bias_gelu_backward(prim(x), Some(prim(bias)), prim(dy));
    let b_dx = wrap::<Cube, D>(b_dx);
    let dbias = wrap::<Cube, 1>(dbias.expect("a bias was given"));

    let after = [
        quick_gelu_forward_launches(),
        quick_gelu_backward_launches(),
        bias_gelu_forward_launches(),
        bias_gelu_backward_launches(),
    ];
    for (name, (b, a)) in [
        "quick forward",
        "quick backward",
        "bias forward",
        "bias backward",
    ]
    .iter()
    .zip(before.into_iter().zip(after))
    {
        assert!(a > b, "the fused {name} did not launch");
    }
    for t in [&q_y, &q_dx, &g_y, &g_dx, &b_y, &b_dx] {
        assert_eq!(t.dtype(), dtype, "outputs keep the input dtype");
        assert_eq!(t.dims().to_vec(), case.dims, "outputs keep the input shape");
    }
    assert_eq!(dbias.dtype(), dtype);
    assert_eq!(dbias.dims(), [case.dims[D - 1]]);

    let cpu = Default::default();
    let reference = case.rounded(dtype);
    let (rx, rbias, rdy) = reference.inputs::<Ref, D>(&cpu);
    let rq_y = quick_gelu_reference(rx.clone());
    let rq_dx = quick_gelu_backward_reference(rx.clone(), rdy.clone());
    let rg_y = bias_gelu_reference(rx.clone(), None);
    let (rg_dx, _) = bias_gelu_backward_reference(rx.clone(), None, rdy.clone());
    let rb_y = bias_gelu_reference(rx.clone(), Some(rbias.clone()));
    let (rb_dx, rdbias) = bias_gelu_backward_reference(rx, Some(rbias), rdy);

    [
        rel_err(q_y.into_data(), rq_y.into_data()),
        rel_err(q_dx.into_data(), rq_dx.into_data()),
        rel_err(g_y.into_data(), rg_y.into_data()),
        rel_err(g_dx.into_data(), rg_dx.into_data()),
        rel_err(b_y.into_data(), rb_y.into_data()),
        rel_err(b_dx.into_data(), rb_dx.into_data()),
        rel_err(dbias.into_data(), rdbias.unwrap().into_data()),
    ]
}

const NAMES: [&str; 7] = [
    "quick y", "quick dx", "gelu y", "gelu dx", "bias y", "bias dx", "dbias",
];

fn check<const D: usize>(dims: [usize; D], seed: u64, dtype: DType, tol: f64) {
    let errs = fused_errors::<D>(&Case::new(&dims, seed), dtype);
    let report: Vec<String> = NAMES
        .iter()
        .zip(errs)
        .map(|(n, e)| format!("{n} {e:.2e}"))
        .collect();
    println!("{dtype:?} {dims:?}: {}", report.join(", "));
    for (name, err) in NAMES.iter().zip(errs) {
        assert!(
            err <= tol,
            "{dtype:?} {dims:?}: {name} error {err:e} > {tol:e}"
        );
    }
}

#[test]
fn fused_f32_1x7() {
    check([1, 7], 1, DType::F32, FUSED_ELEMENTWISE_F32);
}

#[test]
fn fused_f32_6x10() {
    // width 10: vectors of 2.
    check([6, 10], 2, DType::F32, FUSED_ELEMENTWISE_F32);
}

#[test]
fn fused_f32_3x768() {
    check([3, 768], 3, DType::F32, FUSED_ELEMENTWISE_F32);
}

#[test]
fn fused_f32_5x1023() {
    // Odd width: scalar path.
    check([5, 1023], 4, DType::F32, FUSED_ELEMENTWISE_F32);
}

#[test]
fn fused_f32_2x3x1024() {
    check([2, 3, 1024], 5, DType::F32, FUSED_ELEMENTWISE_F32);
}

/// Many short rows: the dbias reduction runs with many row blocks.
#[test]
fn fused_f32_4097x7() {
    check([4097, 7], 6, DType::F32, FUSED_ELEMENTWISE_F32);
}

/// Many rows of a vectorized width: many row blocks and several column cubes.
#[test]
fn fused_f32_600x1032() {
    check([600, 1032], 7, DType::F32, FUSED_ELEMENTWISE_F32);
}

/// f16 storage (computation still in f32), on devices that support f16.
#[test]
fn fused_f16_storage() {
    let device = WgpuDevice::default();
    if !Cube::supports_dtype(&device, DType::F16) {
        println!("f16 storage: not supported by this device, skipped");
        return;
    }
    check([7, 33], 11, DType::F16, FUSED_ELEMENTWISE_F16);
    check([3, 768], 12, DType::F16, FUSED_ELEMENTWISE_F16);
    check([4097, 8], 13, DType::F16, FUSED_ELEMENTWISE_F16);
}

/// bf16 storage, on devices that support it.
#[test]
fn fused_bf16_storage() {
    let device = WgpuDevice::default();
    if !Cube::supports_dtype(&device, DType::BF16) {
        println!("bf16 storage: not supported by this device, skipped");
        return;
    }
    // One bf16 rounding of the output: 2⁻⁸ relative.
    check([5, 256], 14, DType::BF16, 1e-2);
}

/// Strided inputs (a transposed view, a column slice, a row slice with an offset) are made
/// contiguous by the launchers, not misread; `grad_out` is strided too.
#[test]
fn fused_f32_strided_inputs() {
    let device = WgpuDevice::default();
    let cpu = Default::default();
    // Stored [48, 5], used as the transposed view [5, 48].
    let stored = Case::new(&[48, 5], 21);
    // Stored [8, 52], used as rows 1..6 and columns 2..50: [5, 48].
    let wide = Case::new(&[8, 52], 22);
    // Stored [9, 48], used as rows 3..8 (contiguous, with an offset): [5, 48].
    let rows = Case::new(&[9, 48], 23);
    let bias = values(48, 24, -1.0, 1.0);

    fn views<B: Backend>(
        stored: &Case,
        wide: &Case,
        rows: &Case,
        device: &B::Device,
    ) -> Vec<(&'static str, Tensor<B, 2>, Tensor<B, 2>)> {
        let t = |v: &[f32], c: &Case| tensor::<B, 2>(v, &c.dims, device);
        vec![
            (
                "transposed",
                t(&stored.x, stored).transpose(),
                t(&stored.grad_out, stored).transpose(),
            ),
            (
                "column slice",
                t(&wide.x, wide).slice([1..6, 2..50]),
                t(&wide.grad_out, wide).slice([1..6, 2..50]),
            ),
            (
                "row slice",
                t(&rows.x, rows).slice(3..8),
                t(&rows.grad_out, rows).slice(3..8),
            ),
        ]
    }

    let fused = views::<Cube>(&stored, &wide, &rows, &device);
    let reference = views::<Ref>(&stored, &wide, &rows, &cpu);
    let fused_bias = tensor::<Cube, 1>(&bias, &[48], &device);
    let ref_bias = tensor::<Ref, 1>(&bias, &[48], &cpu);
    for ((name, x, dy), (_, rx, rdy)) in fused.into_iter().zip(reference) {
        assert_eq!(x.dims(), [5, 48]);
        let before = bias_gelu_backward_launches();
        let y = bias_gelu(x.clone(), Some(fused_bias.clone()));
        let q = quick_gelu(x.clone());
        let q_dx = Cube::fused_quick_gelu_backward(prim(x.clone()), prim(dy.clone()));
        let (dx, dbias) =
            Cube::fused_bias_gelu_backward(prim(x), Some(prim(fused_bias.clone())), prim(dy));
        assert!(bias_gelu_backward_launches() > before);

        let ry = bias_gelu_reference(rx.clone(), Some(ref_bias.clone()));
        let rq = quick_gelu_reference(rx.clone());
        let rq_dx = quick_gelu_backward_reference(rx.clone(), rdy.clone());
        let (rdx, rdbias) = bias_gelu_backward_reference(rx, Some(ref_bias.clone()), rdy);
        let errs = [
            rel_err(y.into_data(), ry.into_data()),
            rel_err(q.into_data(), rq.into_data()),
            rel_err(wrap::<Cube, 2>(q_dx).into_data(), rq_dx.into_data()),
            rel_err(wrap::<Cube, 2>(dx).into_data(), rdx.into_data()),
            rel_err(
                wrap::<Cube, 1>(dbias.unwrap()).into_data(),
                rdbias.unwrap().into_data(),
            ),
        ];
        println!(
            "f32 strided ({name}) [5, 48]: bias y {:.2e}, quick y {:.2e}, quick dx {:.2e}, \
             bias dx {:.2e}, dbias {:.2e}",
            errs[0], errs[1], errs[2], errs[3], errs[4]
        );
        for err in errs {
            assert!(
                err <= FUSED_ELEMENTWISE_F32,
                "strided ({name}): error {err:e}"
            );
        }
    }
}

/// An empty batch launches nothing, keeps its shape, and yields a zero bias gradient.
#[test]
fn fused_f32_empty_batch() {
    let device = WgpuDevice::default();
    let x = Tensor::<Cube, 3>::zeros([0, 4, 8], &device);
    let bias = Tensor::<Cube, 1>::ones([8], &device);
    let y = Cube::fused_bias_gelu(prim(x.clone()), Some(prim(bias.clone())));
    assert_eq!(wrap::<Cube, 3>(y).dims(), [0, 4, 8]);
    let q = Cube::fused_quick_gelu(prim(x.clone()));
    assert_eq!(wrap::<Cube, 3>(q).dims(), [0, 4, 8]);
    let q_dx = Cube::fused_quick_gelu_backward(prim(x.clone()), prim(x.clone()));
    assert_eq!(wrap::<Cube, 3>(q_dx).dims(), [0, 4, 8]);
    let (dx, dbias) = Cube::fused_bias_gelu_backward(prim(x.clone()), Some(prim(bias)), prim(x));
    assert_eq!(wrap::<Cube, 3>(dx).dims(), [0, 4, 8]);
    let dbias: Vec<f32> = wrap::<Cube, 1>(dbias.unwrap())
        .into_data()
        .to_vec()
        .unwrap();
    assert_eq!(dbias, vec![0.0; 8]);
}

/// The CPU backends take the reference path through the same API, and it equals the reference
/// (also on a 3-D input, which the trait flattens to rows).
#[test]
fn fallback_path_matches_reference() {
    let case = Case::new(&[2, 3, 10], 41);
    let cpu = Default::default();
    let (x, bias, dy) = case.inputs::<Ref, 3>(&cpu);
    let pairs = [
        (quick_gelu(x.clone()), quick_gelu_reference(x.clone())),
        (
            wrap(Ref::fused_quick_gelu_backward(
                prim(x.clone()),
                prim(dy.clone()),
            )),
            quick_gelu_backward_reference(x.clone(), dy.clone()),
        ),
        (
            bias_gelu(x.clone(), Some(bias.clone())),
            bias_gelu_reference(x.clone(), Some(bias.clone())),
        ),
        (
            bias_gelu(x.clone(), None),
            bias_gelu_reference(x.clone(), None),
        ),
    ];
    for (actual, expected) in pairs {
        assert!(rel_err(actual.into_data(), expected.into_data()) <= 1e-12);
    }
    let (dx, dbias) =
        Ref::fused_bias_gelu_backward(prim(x.clone()), Some(prim(bias.clone())), prim(dy.clone()));
    let (rdx, rdbias) = bias_gelu_backward_reference(x, Some(bias), dy);
    assert!(rel_err(wrap::<Ref, 3>(dx).into_data(), rdx.into_data()) <= 1e-12);
    let (dbias, rdbias) = (wrap::<Ref, 1>(dbias.unwrap()), rdbias.unwrap());
    assert!(rel_err(dbias.into_data(), rdbias.into_data()) <= 1e-12);
}

/// Central finite differences, in f64, of `L = Σ f(x, bias) · w` (so `grad_out = w`) through
/// the reference forwards, against the analytic reference backwards.
#[test]
fn reference_backward_matches_finite_differences() {
    let dims = [3usize, 5usize];
    let case = Case::new(&dims, 51);
    let cpu = Default::default();
    let to_f64 = |v: &[f32]| v.iter().map(|&e| e as f64).collect::<Vec<f64>>();
    let (x, bias, w) = (to_f64(&case.x), to_f64(&case.bias), to_f64(&case.grad_out));
    let t2 = |v: &[f64]| Tensor::<Ref, 2>::from_data(TensorData::new(v.to_vec(), dims), &cpu);
    let t1 = |v: &[f64]| Tensor::<Ref, 1>::from_data(TensorData::new(v.to_vec(), [dims[1]]), &cpu);
    let loss = |f: &dyn Fn(Tensor<Ref, 2>, Tensor<Ref, 1>) -> Tensor<Ref, 2>,
                x: &[f64],
                bias: &[f64]|
     -> f64 { (f(t2(x), t1(bias)) * t2(&w)).sum().into_scalar() };
    // Derivative of the loss with respect to input `which` (0: x, 1: bias).
    let numeric = |f: &dyn Fn(Tensor<Ref, 2>, Tensor<Ref, 1>) -> Tensor<Ref, 2>, which: usize| {
        let h = 1e-6;
        let base = [x.clone(), bias.clone()];
        (0..base[which].len())
            .map(|i| {
                let (mut plus, mut minus) = (base.clone(), base.clone());
                plus[which][i] += h;
                minus[which][i] -= h;
                (loss(f, &plus[0], &plus[1]) - loss(f, &minus[0], &minus[1])) / (2.0 * h)
            })
            .collect::<Vec<f64>>()
    };
    let compare = |name: &str, analytic: TensorData, numeric: Vec<f64>| {
        let shape = vec![numeric.len()];
        let err = rel_err(analytic, TensorData::new(numeric, shape));
        println!("finite differences {name}: {err:.2e}");
        assert!(
            err <= 1e-7,
            "{name}: analytic vs finite differences {err:e}"
        );
    };

    let quick = |x: Tensor<Ref, 2>, _: Tensor<Ref, 1>| quick_gelu_reference(x);
    let plain = |x: Tensor<Ref, 2>, _: Tensor<Ref, 1>| bias_gelu_reference(x, None);
    let biased = |x: Tensor<Ref, 2>, b: Tensor<Ref, 1>| bias_gelu_reference(x, Some(b));

    let dx = quick_gelu_backward_reference(t2(&x), t2(&w));
    compare("quick dx", dx.into_data(), numeric(&quick, 0));
    let (dx, _) = bias_gelu_backward_reference(t2(&x), None, t2(&w));
    compare("gelu dx", dx.into_data(), numeric(&plain, 0));
    let (dx, dbias) = bias_gelu_backward_reference(t2(&x), Some(t1(&bias)), t2(&w));
    compare("bias dx", dx.into_data(), numeric(&biased, 0));
    compare("dbias", dbias.unwrap().into_data(), numeric(&biased, 1));
}
