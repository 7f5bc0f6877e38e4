//! The fused GELUs through Burn's fusion backend (`burn::backend::Wgpu`, i.e.
//! `Fusion<CubeBackend<WgpuRuntime, f32, i32, u32>>`) and through `Autodiff`, against the
//! plain-Burn references on `NdArray<f64>` and against Burn's own ops.
//!
//! Fusion runs operations lazily: every result is read (`into_data`) before the launch
//! counters are checked. Run with `--nocapture` to see the measured errors.

use burn::backend::wgpu::WgpuDevice;
use burn::backend::{Autodiff, NdArray};
use burn::tensor::activation::{gelu, sigmoid};
use burn::tensor::backend::Backend;
use burn::tensor::{Tensor, TensorData};
use burnacc_kernels::gelu::{
    GeluKernel, bias_gelu, bias_gelu_backward_launches, bias_gelu_backward_reference,
    bias_gelu_forward_launches, bias_gelu_reference, quick_gelu, quick_gelu_backward_launches,
    quick_gelu_backward_reference, quick_gelu_forward_launches, quick_gelu_reference,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The default `burn::backend::Wgpu`: `Fusion<CubeBackend<WgpuRuntime, f32, i32, u32>>`.
type Wgpu = burn::backend::Wgpu;
type Ref = NdArray<f64>;

use burnacc_tests::tolerance::FUSED_ELEMENTWISE_F32;

use crate::common::{prim, rel_err, wrap};

fn values(n: usize, seed: u64, lo: f32, hi: f32) -> Vec<f32> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..n).map(|_| rng.random_range(lo..hi)).collect()
}

fn tensor<B: Backend, const D: usize>(
    v: &[f32],
    dims: [usize; D],
    device: &B::Device,
) -> Tensor<B, D> {
    Tensor::from_data(TensorData::new(v.to_vec(), dims), device)
}

/// Deterministic `(x, bias, w)` for `dims`: `x` in `[-6, 6]`, `bias` in `[-1, 1]`, and the
/// upstream gradient (or loss weight) `w` in `[-1, 1]`.
fn case<const D: usize>(dims: [usize; D], seed: u64) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let numel = dims.iter().product();
    (
        values(numel, seed, -6.0, 6.0),
        values(dims[D - 1], seed + 1, -1.0, 1.0),
        values(numel, seed + 2, -1.0, 1.0),
    )
}

fn counters() -> [u64; 4] {
    [
        quick_gelu_forward_launches(),
        quick_gelu_backward_launches(),
        bias_gelu_forward_launches(),
        bias_gelu_backward_launches(),
    ]
}

/// Panics unless every launch counter increased since `before`.
fn assert_all_launched(before: [u64; 4]) {
    let names = [
        "quick forward",
        "quick backward",
        "bias forward",
        "bias backward",
    ];
    for ((name, b), a) in names.iter().zip(before).zip(counters()) {
        assert!(a > b, "the fused {name} did not launch");
    }
}

/// All four trait methods on `Wgpu` (recorded as custom fusion ops), checked against the
/// reference.
fn check_fusion<const D: usize>(dims: [usize; D], seed: u64) {
    let (xv, bv, wv) = case(dims, seed);
    let device = WgpuDevice::default();
    let width = [dims[D - 1]];
    let x = tensor::<Wgpu, D>(&xv, dims, &device);
    let bias = tensor::<Wgpu, 1>(&bv, width, &device);
    let dy = tensor::<Wgpu, D>(&wv, dims, &device);
    let before = counters();

    let q_y = wrap::<Wgpu, D>(Wgpu::fused_quick_gelu(prim(x.clone())));
    let q_dx = wrap::<Wgpu, D>(Wgpu::fused_quick_gelu_backward(
        prim(x.clone()),
        prim(dy.clone()),
    ));
    let g_y = wrap::<Wgpu, D>(Wgpu::fused_bias_gelu(prim(x.clone()), None));
    let (g_dx, none) = Wgpu::fused_bias_gelu_backward(prim(x.clone()), None, prim(dy.clone()));
    assert!(none.is_none());
    let b_y = wrap::<Wgpu, D>(Wgpu::fused_bias_gelu(
        prim(x.clone()),
        Some(prim(bias.clone())),
    ));
    let (b_dx, dbias) = Wgpu::fused_bias_gelu_backward(prim(x), Some(prim(bias)), prim(dy));
    let dbias = wrap::<Wgpu, 1>(dbias.expect("a bias was given"));
    assert_eq!(dbias.dims(), width);
    // Reading the results executes the recorded operations.
    let fused = [q_y, q_dx, g_y, wrap(g_dx), b_y, wrap(b_dx)].map(Tensor::into_data);
    let fused_dbias = dbias.into_data();
    assert_all_launched(before);

    let cpu = Default::default();
    let rx = tensor::<Ref, D>(&xv, dims, &cpu);
    let rbias = tensor::<Ref, 1>(&bv, width, &cpu);
    let rdy = tensor::<Ref, D>(&wv, dims, &cpu);
    let (rg_dx, _) = bias_gelu_backward_reference(rx.clone(), None, rdy.clone());
    let (rb_dx, rdbias) =
        bias_gelu_backward_reference(rx.clone(), Some(rbias.clone()), rdy.clone());
    let expected = [
        quick_gelu_reference(rx.clone()),
        quick_gelu_backward_reference(rx.clone(), rdy),
        bias_gelu_reference(rx.clone(), None),
        rg_dx,
        bias_gelu_reference(rx, Some(rbias)),
        rb_dx,
    ]
    .map(Tensor::into_data);
    let names = [
        "quick y", "quick dx", "gelu y", "gelu dx", "bias y", "bias dx", "dbias",
    ];
    let mut errs: Vec<f64> = fused
        .into_iter()
        .zip(expected)
        .map(|(a, e)| rel_err(a, e))
        .collect();
    errs.push(rel_err(fused_dbias, rdbias.unwrap().into_data()));
    let report: Vec<String> = names
        .iter()
        .zip(&errs)
        .map(|(n, e)| format!("{n} {e:.2e}"))
        .collect();
    println!("fusion f32 {dims:?}: {}", report.join(", "));
    for (name, err) in names.iter().zip(errs) {
        assert!(
            err <= FUSED_ELEMENTWISE_F32,
            "{dims:?}: {name} error {err:e}"
        );
    }
}

#[test]
fn fusion_f32_7x33() {
    check_fusion([7, 33], 101);
}

#[test]
fn fusion_f32_2x3x1024() {
    check_fusion([2, 3, 1024], 102);
}

/// The custom operations sit between fusable element-wise ops: their inputs are produced by
/// still-pending fused ops and their outputs consumed by others, so stream ordering matters.
#[test]
fn fusion_between_element_wise_ops() {
    let dims = [9usize, 130];
    let (xv, bv, _) = case(dims, 111);
    let device = WgpuDevice::default();
    let x = tensor::<Wgpu, 2>(&xv, dims, &device);
    let bias = tensor::<Wgpu, 1>(&bv, [dims[1]], &device);
    let before = counters();
    let y = bias_gelu(x.clone() * 2.0 - 1.0, Some(bias * 0.5)) * 3.0 + 0.5;
    let q = quick_gelu(x * 0.5 + 0.25) - 1.0;
    let (y, q) = (y.into_data(), q.into_data());
    assert!(bias_gelu_forward_launches() > before[2]);
    assert!(quick_gelu_forward_launches() > before[0]);

    let cpu = Default::default();
    let rx = tensor::<Ref, 2>(&xv, dims, &cpu);
    let rbias = tensor::<Ref, 1>(&bv, [dims[1]], &cpu);
    let ry = bias_gelu_reference(rx.clone() * 2.0 - 1.0, Some(rbias * 0.5)) * 3.0 + 0.5;
    let rq = quick_gelu_reference(rx * 0.5 + 0.25) - 1.0;
    let errs = [rel_err(y, ry.into_data()), rel_err(q, rq.into_data())];
    println!(
        "fusion between element-wise ops: bias y {:.2e}, quick y {:.2e}",
        errs[0], errs[1]
    );
    for err in errs {
        assert!(err <= FUSED_ELEMENTWISE_F32, "error {err:e}");
    }
}

/// `Autodiff<Wgpu>`, `loss = Σ f(x) · w`: the fused QuickGELU's gradient against Burn's own
/// autodiff of `x · sigmoid(1.702 x)` built from Burn ops, and against the f64 reference.
#[test]
fn autodiff_fusion_quick_gelu() {
    type Ad = Autodiff<Wgpu>;
    let dims = [4usize, 3, 256];
    let (xv, _, wv) = case(dims, 121);
    let device = WgpuDevice::default();
    let w = tensor::<Ad, 3>(&wv, dims, &device);
    let before = counters();

    let x = tensor::<Ad, 3>(&xv, dims, &device).require_grad();
    let y = quick_gelu(x.clone());
    let grads = (y.clone() * w.clone()).sum().backward();
    let (y, dx) = (
        y.into_data(),
        x.grad(&grads).expect("x is tracked").into_data(),
    );
    assert!(
        quick_gelu_forward_launches() > before[0],
        "fused forward did not launch"
    );
    assert!(
        quick_gelu_backward_launches() > before[1],
        "fused backward did not launch"
    );

    let bx = tensor::<Ad, 3>(&xv, dims, &device).require_grad();
    let by = bx.clone() * sigmoid(bx.clone() * 1.702);
    let bgrads = (by.clone() * w).sum().backward();
    let burn_dx = bx.grad(&bgrads).unwrap().into_data();

    let cpu = Default::default();
    let rx = tensor::<Ref, 3>(&xv, dims, &cpu);
    let rdx = quick_gelu_backward_reference(rx, tensor::<Ref, 3>(&wv, dims, &cpu));
    let errs = [
        rel_err(y, by.into_data()),
        rel_err(dx.clone(), burn_dx),
        rel_err(dx, rdx.into_data()),
    ];
    println!(
        "autodiff fusion quick_gelu {dims:?}: y vs burn {:.2e}, dx vs burn {:.2e}, dx vs f64 \
         reference {:.2e}",
        errs[0], errs[1], errs[2]
    );
    // Burn's ops run in f32 on the device too (its sigmoid as exp(−log(1 + exp(−x)))), so the
    // two f32 computations differ by a few roundings.
    assert!(
        errs[0] <= 1e-5 && errs[1] <= 1e-5,
        "vs Burn's ops: {errs:?}"
    );
    assert!(errs[2] <= FUSED_ELEMENTWISE_F32, "vs reference: {errs:?}");
}

/// `Autodiff<Wgpu>`, `loss = Σ bias_gelu(x, bias) · w`: the fused gradients of `x` and `bias`
/// against Burn's own autodiff of `gelu(x + bias)`, and against the f64 reference.
///
/// Burn's `gelu` forward is the exact erf GELU, but its default `gelu_backward` (which the
/// CubeCL backend keeps) differentiates the tanh approximation, so Burn's own gradient is off
/// by up to about 1e-3 of the exact one; the fused gradients are compared to it with that
/// tolerance, and to the exact reference tightly.
#[test]
fn autodiff_fusion_bias_gelu() {
    type Ad = Autodiff<Wgpu>;
    let dims = [4usize, 3, 256];
    let (xv, bv, wv) = case(dims, 131);
    let device = WgpuDevice::default();
    let width = [dims[2]];
    let w = tensor::<Ad, 3>(&wv, dims, &device);
    let before = counters();

    let x = tensor::<Ad, 3>(&xv, dims, &device).require_grad();
    let bias = tensor::<Ad, 1>(&bv, width, &device).require_grad();
    let y = bias_gelu(x.clone(), Some(bias.clone()));
    let grads = (y.clone() * w.clone()).sum().backward();
    let y = y.into_data();
    let dx = x.grad(&grads).expect("x is tracked").into_data();
    let dbias = bias.grad(&grads).expect("bias is tracked").into_data();
    assert!(
        bias_gelu_forward_launches() > before[2],
        "fused forward did not launch"
    );
    assert!(
        bias_gelu_backward_launches() > before[3],
        "fused backward did not launch"
    );

    let bx = tensor::<Ad, 3>(&xv, dims, &device).require_grad();
    let bbias = tensor::<Ad, 1>(&bv, width, &device).require_grad();
    let by = gelu(bx.clone() + bbias.clone().unsqueeze::<3>());
    let bgrads = (by.clone() * w).sum().backward();
    let burn_dx = bx.grad(&bgrads).unwrap().into_data();
    let burn_dbias = bbias.grad(&bgrads).unwrap().into_data();

    let cpu = Default::default();
    let (rdx, rdbias) = bias_gelu_backward_reference(
        tensor::<Ref, 3>(&xv, dims, &cpu),
        Some(tensor::<Ref, 1>(&bv, width, &cpu)),
        tensor::<Ref, 3>(&wv, dims, &cpu),
    );
    let burn_errs = [
        rel_err(y, by.into_data()),
        rel_err(dx.clone(), burn_dx),
        rel_err(dbias.clone(), burn_dbias),
    ];
    let ref_errs = [
        rel_err(dx, rdx.into_data()),
        rel_err(dbias, rdbias.unwrap().into_data()),
    ];
    println!(
        "autodiff fusion bias_gelu {dims:?}: vs burn y {:.2e}, dx {:.2e}, dbias {:.2e}; vs f64 \
         reference dx {:.2e}, dbias {:.2e}",
        burn_errs[0], burn_errs[1], burn_errs[2], ref_errs[0], ref_errs[1]
    );
    assert!(
        burn_errs[0] <= 1e-5,
        "forward vs Burn's gelu: {burn_errs:?}"
    );
    assert!(
        burn_errs[1] <= 2e-3 && burn_errs[2] <= 2e-3,
        "vs Burn's gelu: {burn_errs:?}"
    );
    for err in ref_errs {
        assert!(err <= FUSED_ELEMENTWISE_F32, "vs reference: {ref_errs:?}");
    }
}

/// `Autodiff<Wgpu>` without a bias: only `x` is differentiated, through the element-wise path.
#[test]
fn autodiff_fusion_gelu_without_bias() {
    type Ad = Autodiff<Wgpu>;
    let dims = [5usize, 64];
    let (xv, _, wv) = case(dims, 141);
    let device = WgpuDevice::default();
    let before = counters();
    let x = tensor::<Ad, 2>(&xv, dims, &device).require_grad();
    let y = bias_gelu(x.clone(), None);
    let grads = (y * tensor::<Ad, 2>(&wv, dims, &device)).sum().backward();
    let dx = x.grad(&grads).expect("x is tracked").into_data();
    assert!(
        bias_gelu_backward_launches() > before[3],
        "fused backward did not launch"
    );

    let cpu = Default::default();
    let (rdx, _) = bias_gelu_backward_reference(
        tensor::<Ref, 2>(&xv, dims, &cpu),
        None,
        tensor::<Ref, 2>(&wv, dims, &cpu),
    );
    let err = rel_err(dx, rdx.into_data());
    println!("autodiff fusion gelu (no bias) {dims:?}: dx {err:.2e}");
    assert!(err <= FUSED_ELEMENTWISE_F32, "dx error {err:e}");
}

/// On a CPU backend the nodes' backwards are the reference backwards; they must agree with
/// Burn's own autodiff of the decomposed formulas in f64 (the exact GELU written with `erf`,
/// whose autodiff derivative is exact, and the sigmoid written with `exp`).
#[test]
fn autodiff_node_matches_decomposed_autodiff() {
    type Ad = Autodiff<Ref>;
    let dims = [4usize, 13];
    let (xv, bv, wv) = case(dims, 151);
    let cpu = Default::default();
    let width = [dims[1]];
    let w = tensor::<Ad, 2>(&wv, dims, &cpu);
    let leaves = || {
        (
            tensor::<Ad, 2>(&xv, dims, &cpu).require_grad(),
            tensor::<Ad, 1>(&bv, width, &cpu).require_grad(),
        )
    };
    let exact_gelu =
        |z: Tensor<Ad, 2>| z.clone() * ((z * core::f64::consts::FRAC_1_SQRT_2).erf() + 1.0) * 0.5;

    // Bias GELU: fused node vs decomposed.
    let (x, b) = leaves();
    let grads = (bias_gelu(x.clone(), Some(b.clone())) * w.clone())
        .sum()
        .backward();
    let fused = [x.grad(&grads).unwrap(), b.grad(&grads).unwrap().unsqueeze()];
    let (x, b) = leaves();
    let grads = (exact_gelu(x.clone() + b.clone().unsqueeze()) * w.clone())
        .sum()
        .backward();
    let decomposed = [x.grad(&grads).unwrap(), b.grad(&grads).unwrap().unsqueeze()];
    for (name, (a, e)) in ["dx", "dbias"]
        .iter()
        .zip(fused.into_iter().zip(decomposed))
    {
        let err = rel_err(a.into_data(), e.into_data());
        assert!(
            err <= 1e-10,
            "bias_gelu {name}: fused node vs decomposed autodiff {err:e}"
        );
    }

    // QuickGELU: fused node vs decomposed.
    let (x, _) = leaves();
    let grads = (quick_gelu(x.clone()) * w.clone()).sum().backward();
    let fused = x.grad(&grads).unwrap();
    let (x, _) = leaves();
    let s = ((x.clone() * -1.702).exp() + 1.0).recip();
    let grads = (x.clone() * s * w).sum().backward();
    let err = rel_err(fused.into_data(), x.grad(&grads).unwrap().into_data());
    assert!(
        err <= 1e-10,
        "quick_gelu dx: fused node vs decomposed autodiff {err:e}"
    );
}

/// `Autodiff<Wgpu>` with a constant (untracked) bias: `x` gets its gradient, the bias gradient
/// computed by the same fused backward is dropped, and the bias has none.
#[test]
fn autodiff_fusion_bias_gelu_constant_bias() {
    type Ad = Autodiff<Wgpu>;
    let dims = [6usize, 40];
    let (xv, bv, wv) = case(dims, 161);
    let device = WgpuDevice::default();
    let x = tensor::<Ad, 2>(&xv, dims, &device).require_grad();
    let bias = tensor::<Ad, 1>(&bv, [dims[1]], &device);
    let y = bias_gelu(x.clone(), Some(bias.clone()));
    let grads = (y * tensor::<Ad, 2>(&wv, dims, &device)).sum().backward();
    assert!(
        bias.grad(&grads).is_none(),
        "a constant bias has no gradient"
    );
    let dx = x.grad(&grads).expect("x is tracked").into_data();

    let cpu = Default::default();
    let (rdx, _) = bias_gelu_backward_reference(
        tensor::<Ref, 2>(&xv, dims, &cpu),
        Some(tensor::<Ref, 1>(&bv, [dims[1]], &cpu)),
        tensor::<Ref, 2>(&wv, dims, &cpu),
    );
    let err = rel_err(dx, rdx.into_data());
    println!("autodiff fusion bias_gelu, constant bias {dims:?}: dx {err:.2e}");
    assert!(err <= FUSED_ELEMENTWISE_F32, "dx error {err:e}");
}

/// One tensor passed as two inputs of a backward (`x` as its own `grad_out`): fusion hands the
/// first use a read-only handle and the last a read-write one, and both must see the data.
#[test]
fn fusion_backward_with_aliased_inputs() {
    let dims = [6usize, 40];
    let (xv, bv, _) = case(dims, 171);
    let device = WgpuDevice::default();
    let x = tensor::<Wgpu, 2>(&xv, dims, &device);
    let bias = tensor::<Wgpu, 1>(&bv, [dims[1]], &device);
    let q_dx = Wgpu::fused_quick_gelu_backward(prim(x.clone()), prim(x.clone()));
    let (dx, dbias) = Wgpu::fused_bias_gelu_backward(prim(x.clone()), Some(prim(bias)), prim(x));

    let cpu = Default::default();
    let rx = tensor::<Ref, 2>(&xv, dims, &cpu);
    let rbias = tensor::<Ref, 1>(&bv, [dims[1]], &cpu);
    let rq_dx = quick_gelu_backward_reference(rx.clone(), rx.clone());
    let (rdx, rdbias) = bias_gelu_backward_reference(rx.clone(), Some(rbias), rx);
    let errs = [
        rel_err(wrap::<Wgpu, 2>(q_dx).into_data(), rq_dx.into_data()),
        rel_err(wrap::<Wgpu, 2>(dx).into_data(), rdx.into_data()),
        rel_err(
            wrap::<Wgpu, 1>(dbias.unwrap()).into_data(),
            rdbias.unwrap().into_data(),
        ),
    ];
    println!(
        "fusion aliased inputs {dims:?}: quick dx {:.2e}, bias dx {:.2e}, dbias {:.2e}",
        errs[0], errs[1], errs[2]
    );
    for err in errs {
        assert!(err <= FUSED_ELEMENTWISE_F32, "error {err:e}");
    }
}
