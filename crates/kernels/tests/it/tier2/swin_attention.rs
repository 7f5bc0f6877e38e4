//! The fused window-attention softmax (CubeCL on wgpu, through `Fusion` and `Autodiff`)
//! against the plain-Burn reference on `NdArray<f64>`, the custom backward against Burn's
//! autodiff of the reference, and against central finite differences in f64.
//!
//! Scores span `[-4, 4]`, the table `[-1, 1]`, and masks hold timm's 0 / −100, so masked
//! pairs underflow to 0 as in a shifted window. Run with `--nocapture` to see the errors.

use burn::backend::wgpu::{CubeBackend, WgpuDevice, WgpuRuntime};
use burn::backend::{Autodiff, NdArray};
use burn::tensor::backend::Backend;
use burn::tensor::{DType, Int, Tensor, TensorData};
use burnacc_kernels::swin_attention::{
    SwinAttentionKernel, window_softmax, window_softmax_backward_launches,
    window_softmax_backward_reference, window_softmax_forward_launches, window_softmax_reference,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

type Cube = CubeBackend<WgpuRuntime, f32, i32, u32>;
/// The default `burn::backend::Wgpu`: `Fusion<CubeBackend<WgpuRuntime, f32, i32, u32>>`.
type Wgpu = burn::backend::Wgpu;
type Ref = NdArray<f64>;

use burnacc_tests::tolerance::{FUSED_ELEMENTWISE_F16, FUSED_ELEMENTWISE_F32};

use crate::common::{prim, rel_err, wrap};

/// One attention geometry: `windows` windows of `window` tokens, `heads` heads, and the mask's
/// window count (`None`: unshifted block, no mask).
struct Case {
    windows: usize,
    heads: usize,
    window: [usize; 2],
    mask_windows: Option<usize>,
}

const CASES: [Case; 4] = [
    // Swin-T stage 1 shape at batch 2 (4 windows per image in a 14×14 map), shifted.
    Case {
        windows: 8,
        heads: 3,
        window: [7, 7],
        mask_windows: Some(4),
    },
    // Unshifted, non-square window.
    Case {
        windows: 6,
        heads: 2,
        window: [3, 4],
        mask_windows: None,
    },
    // Odd window count, one mask per window.
    Case {
        windows: 5,
        heads: 1,
        window: [2, 3],
        mask_windows: Some(5),
    },
    // A single token per window: softmax of one logit.
    Case {
        windows: 3,
        heads: 2,
        window: [1, 1],
        mask_windows: None,
    },
];

/// Deterministic values of one case.
struct Values {
    scores: Vec<f32>,
    table: Vec<f32>,
    index: Vec<i64>,
    mask: Option<Vec<f32>>,
    grad: Vec<f32>,
}

impl Case {
    fn n(&self) -> usize {
        self.window[0] * self.window[1]
    }

    fn score_dims(&self) -> [usize; 4] {
        [self.windows, self.heads, self.n(), self.n()]
    }

    fn offsets(&self) -> usize {
        (2 * self.window[0] - 1) * (2 * self.window[1] - 1)
    }

    /// timm's `relative_position_index` of the window.
    fn index(&self) -> Vec<i64> {
        let [wh, ww] = self.window.map(|s| s as i64);
        let n = self.n() as i64;
        let mut index = Vec::new();
        for q in 0..n {
            for k in 0..n {
                let dy = q / ww - k / ww + wh - 1;
                let dx = q % ww - k % ww + ww - 1;
                index.push(dy * (2 * ww - 1) + dx);
            }
        }
        index
    }

    fn values(&self, seed: u64) -> Values {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut uniform = |len: usize, lo: f32, hi: f32| -> Vec<f32> {
            (0..len).map(|_| rng.random_range(lo..hi)).collect()
        };
        let numel = self.score_dims().iter().product();
        let scores = uniform(numel, -4.0, 4.0);
        let table = uniform(self.offsets() * self.heads, -1.0, 1.0);
        let grad = uniform(numel, -1.0, 1.0);
        // Masked where the two tokens fall in different halves of a random labelling, and
        // never on the diagonal, so that every row keeps an unmasked logit (as in timm).
        let mask = self.mask_windows.map(|windows| {
            let n = self.n();
            let labels = uniform(windows * n, 0.0, 1.0);
            let mut mask = Vec::with_capacity(windows * n * n);
            for w in 0..windows {
                for q in 0..n {
                    for k in 0..n {
                        let same = (labels[w * n + q] < 0.5) == (labels[w * n + k] < 0.5);
                        mask.push(if same { 0.0 } else { -100.0 });
                    }
                }
            }
            mask
        });
        Values {
            scores,
            table,
            index: self.index(),
            mask,
            grad,
        }
    }

    fn inputs<B: Backend>(
        &self,
        v: &Values,
        device: &B::Device,
    ) -> (
        Tensor<B, 4>,
        Tensor<B, 2>,
        Tensor<B, 1, Int>,
        Option<Tensor<B, 3>>,
    ) {
        let n = self.n();
        (
            float(&v.scores, self.score_dims().to_vec(), device),
            float(&v.table, vec![self.offsets(), self.heads], device),
            Tensor::from_data(TensorData::new(v.index.clone(), [n * n]), device),
            v.mask
                .as_ref()
                .zip(self.mask_windows)
                .map(|(m, w)| float(m, vec![w, n, n], device)),
        )
    }

    fn grad<B: Backend>(&self, v: &Values, device: &B::Device) -> Tensor<B, 4> {
        Tensor::from_data(TensorData::new(v.grad.clone(), self.score_dims()), device)
    }
}

fn float<B: Backend, const D: usize>(
    values: &[f32],
    dims: Vec<usize>,
    device: &B::Device,
) -> Tensor<B, D> {
    Tensor::from_data(TensorData::new(values.to_vec(), dims), device)
}

fn counters() -> (u64, u64) {
    (
        window_softmax_forward_launches(),
        window_softmax_backward_launches(),
    )
}

/// Forward and backward kernels on `CubeBackend` (f32 storage, or f16 when `half`) against
/// the f64 reference.
fn check_cube(case: &Case, seed: u64, dtype: DType, tol: f64) {
    let device = WgpuDevice::default();
    let cpu = Default::default();
    let v = case.values(seed);
    let before = counters();

    let (scores, table, index, mask) = case.inputs::<Cube>(&v, &device);
    let cast = |t: Tensor<Cube, 4>| t.cast(dtype);
    let (scores, table) = (cast(scores), table.cast(dtype));
    let mask = mask.map(|m| m.cast(dtype));
    // What the device stores, for the reference to see the same rounded inputs.
    let stored = |t: Tensor<Cube, 4>| t.cast(DType::F32).into_data();
    let probs = window_softmax(scores.clone(), table.clone(), index, mask.clone());
    assert_eq!(probs.dtype(), dtype);
    let grad = cast(case.grad::<Cube>(&v, &device));
    let dscores = wrap::<Cube, 4>(Cube::fused_window_softmax_backward(
        prim(probs.clone()),
        prim(grad.clone()),
    ));
    let (probs_v, dscores_v) = (
        probs.clone().cast(DType::F32).into_data(),
        dscores.cast(DType::F32).into_data(),
    );
    let after = counters();
    assert!(after.0 > before.0, "the fused forward did not launch");
    assert!(after.1 > before.1, "the fused backward did not launch");

    let to_ref = |data: TensorData, dims: Vec<usize>| {
        Tensor::<Ref, 4>::from_data(
            TensorData::new(data.iter::<f64>().collect::<Vec<_>>(), dims),
            &cpu,
        )
    };
    let dims = case.score_dims().to_vec();
    let r_scores = to_ref(stored(scores), dims.clone());
    let r_table: Tensor<Ref, 2> = Tensor::from_data(
        TensorData::new(
            table
                .cast(DType::F32)
                .into_data()
                .iter::<f64>()
                .collect::<Vec<_>>(),
            [case.offsets(), case.heads],
        ),
        &cpu,
    );
    let r_mask = mask.map(|m| {
        let dims = m.dims();
        Tensor::<Ref, 3>::from_data(
            TensorData::new(
                m.cast(DType::F32)
                    .into_data()
                    .iter::<f64>()
                    .collect::<Vec<_>>(),
                dims,
            ),
            &cpu,
        )
    });
    let (_, _, r_index, _) = case.inputs::<Ref>(&v, &cpu);
    let expected = window_softmax_reference(r_scores, r_table, r_index, r_mask);
    // The backward from the device's own probabilities, so that only the backward is tested.
    let r_probs = to_ref(probs.cast(DType::F32).into_data(), dims.clone());
    let r_grad = to_ref(stored(grad), dims);
    let expected_d = window_softmax_backward_reference(r_probs, r_grad);
    let errs = [
        rel_err(probs_v, expected.into_data()),
        rel_err(dscores_v, expected_d.into_data()),
    ];
    println!(
        "window softmax {:?} {dtype:?}: probs {:.2e}, dscores {:.2e}",
        case.score_dims(),
        errs[0],
        errs[1]
    );
    assert!(errs[0] <= tol && errs[1] <= tol, "{errs:?} > {tol:e}");
}

#[test]
fn cube_f32_matches_reference() {
    for (i, case) in CASES.iter().enumerate() {
        check_cube(case, i as u64, DType::F32, FUSED_ELEMENTWISE_F32);
    }
}

#[test]
fn cube_f16_matches_reference() {
    if !Cube::supports_dtype(&WgpuDevice::default(), DType::F16) {
        println!("f16 storage: not supported by this device, skipped");
        return;
    }
    for (i, case) in CASES.iter().enumerate().take(3) {
        check_cube(case, 10 + i as u64, DType::F16, FUSED_ELEMENTWISE_F16);
    }
}

/// `Autodiff<Wgpu>` (fusion custom ops), `loss = Σ window_softmax(scores, table) ⊙ g`: the
/// gradients of `scores` and `table` against Burn's own autodiff of the reference in f64
/// (`select` backward for the table, Burn's softmax backward for the scores).
#[test]
fn autodiff_fusion_gradients_match_burn_autodiff() {
    type Ad = Autodiff<Wgpu>;
    type AdRef = Autodiff<Ref>;
    let device = WgpuDevice::default();
    let cpu = Default::default();
    for (i, case) in CASES.iter().enumerate() {
        let v = case.values(20 + i as u64);
        let before = counters();

        let (scores, table, index, mask) = case.inputs::<Ad>(&v, &device);
        let (scores, table) = (scores.require_grad(), table.require_grad());
        let probs = window_softmax(scores.clone(), table.clone(), index, mask);
        let grads = (probs.clone() * case.grad::<Ad>(&v, &device))
            .sum()
            .backward();
        let dscores = scores.grad(&grads).expect("scores are tracked").into_data();
        let dtable = table
            .grad(&grads)
            .expect("the table is tracked")
            .into_data();
        let probs = probs.into_data();
        let after = counters();
        assert!(
            after.0 > before.0 && after.1 > before.1,
            "fused kernels did not launch"
        );

        let (r_scores, r_table, r_index, r_mask) = case.inputs::<AdRef>(&v, &cpu);
        let (r_scores, r_table) = (r_scores.require_grad(), r_table.require_grad());
        let r_probs = window_softmax_reference(r_scores.clone(), r_table.clone(), r_index, r_mask);
        let r_grads = (r_probs.clone() * case.grad::<AdRef>(&v, &cpu))
            .sum()
            .backward();
        let errs = [
            rel_err(probs, r_probs.into_data()),
            rel_err(dscores, r_scores.grad(&r_grads).unwrap().into_data()),
            rel_err(dtable, r_table.grad(&r_grads).unwrap().into_data()),
        ];
        println!(
            "autodiff {:?}: probs {:.2e}, dscores {:.2e}, dtable {:.2e}",
            case.score_dims(),
            errs[0],
            errs[1],
            errs[2]
        );
        assert!(errs.iter().all(|&e| e <= 1e-5), "{errs:?}");
    }
}

/// The custom backward node on `Autodiff<NdArray<f64>>` (reference maths inside our node)
/// against central finite differences of the loss in f64, for a sample of score and table
/// entries.
#[test]
fn custom_backward_matches_finite_differences() {
    type AdRef = Autodiff<Ref>;
    let cpu = Default::default();
    let case = &CASES[2];
    let v = case.values(31);
    let loss = |scores: Tensor<Ref, 4>, table: Tensor<Ref, 2>| -> f64 {
        let (_, _, index, mask) = case.inputs::<Ref>(&v, &cpu);
        let probs = window_softmax::<Ref>(scores, table, index, mask);
        (probs * case.grad::<Ref>(&v, &cpu)).sum().into_scalar()
    };

    let (scores, table, index, mask) = case.inputs::<AdRef>(&v, &cpu);
    let (scores, table) = (scores.require_grad(), table.require_grad());
    let probs = window_softmax(scores.clone(), table.clone(), index, mask);
    let grads = (probs * case.grad::<AdRef>(&v, &cpu)).sum().backward();
    let dscores: Vec<f64> = scores.grad(&grads).unwrap().into_data().iter().collect();
    let dtable: Vec<f64> = table.grad(&grads).unwrap().into_data().iter().collect();

    let (s0, t0, _, _) = case.inputs::<Ref>(&v, &cpu);
    let h = 1e-6;
    let bump = |values: &[f64], i: usize, d: f64| -> Vec<f64> {
        let mut v = values.to_vec();
        v[i] += d;
        v
    };
    let s_vals: Vec<f64> = s0.clone().into_data().iter().collect();
    let t_vals: Vec<f64> = t0.clone().into_data().iter().collect();
    let s_dims = case.score_dims();
    let t_dims = [case.offsets(), case.heads];
    let mut worst: f64 = 0.0;
    for i in (0..s_vals.len()).step_by(7) {
        let f = |d| {
            let s = Tensor::from_data(TensorData::new(bump(&s_vals, i, d), s_dims), &cpu);
            loss(s, t0.clone())
        };
        let fd = (f(h) - f(-h)) / (2.0 * h);
        worst = worst.max((fd - dscores[i]).abs());
    }
    for i in 0..t_vals.len() {
        let f = |d| {
            let t = Tensor::from_data(TensorData::new(bump(&t_vals, i, d), t_dims), &cpu);
            loss(s0.clone(), t)
        };
        let fd = (f(h) - f(-h)) / (2.0 * h);
        worst = worst.max((fd - dtable[i]).abs());
    }
    println!("finite differences: worst absolute error {worst:.2e}");
    assert!(worst <= 1e-7, "worst {worst:e}");
}
