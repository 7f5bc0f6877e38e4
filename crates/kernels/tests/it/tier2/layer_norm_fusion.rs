//! The fused LayerNorm through Burn's fusion backend (`burn::backend::Wgpu`, i.e.
//! `Fusion<CubeBackend<WgpuRuntime, f32, i32, u32>>`) and `Autodiff<Wgpu>`, against the
//! plain-Burn reference on `NdArray<f64>`.
//!
//! Fusion runs operations lazily: every result is read (`into_data`) before the launch
//! counters are checked. Run with `--nocapture` to see the measured errors.

use burn::backend::wgpu::WgpuDevice;
use burn::backend::{Autodiff, NdArray};
use burn::tensor::{DType, Tensor};
use burnacc_kernels::layer_norm::{
    LayerNormKernel, layer_norm, layer_norm_backward_launches, layer_norm_backward_reference,
    layer_norm_forward_launches, layer_norm_reference,
};

/// The default `burn::backend::Wgpu`: `Fusion<CubeBackend<WgpuRuntime, f32, i32, u32>>`.
type Wgpu = burn::backend::Wgpu;
type Ref = NdArray<f64>;

use burnacc_tests::tolerance::{FUSED_F32_FORWARD, FUSED_F32_GRADIENT};

use crate::common::*;

/// Forward and backward on `Wgpu` through the trait methods, checked against the reference;
/// panics unless both fused launch counters increased.
fn check_fusion<const D: usize>(dims: [usize; D], seed: u64) {
    let case = Case::new(&dims, seed);
    let device = WgpuDevice::default();
    let (x, gamma, beta, grad_out) = case.inputs::<Wgpu, D>(&device);
    let (forward_before, backward_before) = (
        layer_norm_forward_launches(),
        layer_norm_backward_launches(),
    );

    let (y, mean, rstd) =
        Wgpu::fused_layer_norm_with_stats(prim(x.clone()), prim(gamma.clone()), prim(beta), EPS);
    let (mean, rstd) = (wrap::<Wgpu, 1>(mean), wrap::<Wgpu, 1>(rstd));
    for stat in [&mean, &rstd] {
        assert_eq!(stat.dims(), [case.rows()], "statistics are [rows]");
        assert_eq!(stat.dtype(), DType::F32, "statistics are f32");
    }
    let (dx, dgamma, dbeta) = Wgpu::fused_layer_norm_backward(
        prim(x),
        prim(gamma),
        prim(grad_out),
        prim(mean.clone()),
        prim(rstd.clone()),
    );
    let y = wrap::<Wgpu, D>(y);
    let dx = wrap::<Wgpu, D>(dx);
    let (dgamma, dbeta) = (wrap::<Wgpu, 1>(dgamma), wrap::<Wgpu, 1>(dbeta));
    assert_eq!(y.dims().to_vec(), case.dims);
    assert_eq!(dx.dims().to_vec(), case.dims);

    // Reading the results executes the recorded operations.
    let fused = [y, dx].map(Tensor::into_data);
    let fused_params = [dgamma, dbeta].map(Tensor::into_data);
    // The statistics' device buffers match their declared dtype and length.
    for stat in [mean, rstd] {
        assert_eq!(stat.into_data().to_vec::<f32>().unwrap().len(), case.rows());
    }
    assert!(
        layer_norm_forward_launches() > forward_before,
        "the fused forward did not launch"
    );
    assert!(
        layer_norm_backward_launches() > backward_before,
        "the fused backward did not launch"
    );

    let cpu = Default::default();
    let (rx, rgamma, rbeta, rgrad) = case.inputs::<Ref, D>(&cpu);
    let ry = layer_norm_reference(rx.clone(), rgamma.clone(), rbeta, EPS);
    let (rdx, rdgamma, rdbeta) = layer_norm_backward_reference(rx, rgamma, rgrad, EPS);
    let [y, dx] = fused;
    let [dgamma, dbeta] = fused_params;
    let errs = [
        rel_err(y, ry.into_data()),
        rel_err(dx, rdx.into_data()),
        rel_err(dgamma, rdgamma.into_data()),
        rel_err(dbeta, rdbeta.into_data()),
    ];
    println!(
        "fusion f32 {dims:?}: y {:.2e}, dx {:.2e}, dgamma {:.2e}, dbeta {:.2e}",
        errs[0], errs[1], errs[2], errs[3]
    );
    assert!(
        errs[0] <= FUSED_F32_FORWARD,
        "{dims:?}: forward error {:e}",
        errs[0]
    );
    for (name, err) in ["dx", "dgamma", "dbeta"].iter().zip(&errs[1..]) {
        assert!(*err <= FUSED_F32_GRADIENT, "{dims:?}: {name} error {err:e}");
    }
}

#[test]
fn fusion_f32_7x33() {
    check_fusion([7, 33], 101);
}

#[test]
fn fusion_f32_33x768() {
    check_fusion([33, 768], 102);
}

#[test]
fn fusion_f32_2x3x1024() {
    check_fusion([2, 3, 1024], 103);
}

/// The custom operation sits between fusable element-wise ops: its input is produced by a
/// still-pending fused op and its output consumed by another, so stream ordering matters.
#[test]
fn fusion_between_element_wise_ops() {
    let case = Case::new(&[9, 130], 111);
    let device = WgpuDevice::default();
    let (x, gamma, beta, _) = case.inputs::<Wgpu, 2>(&device);
    let before = layer_norm_forward_launches();
    let y = layer_norm(x * 2.0 - 1.0, gamma, beta, EPS) * 3.0 + 0.5;
    let y = y.into_data();
    assert!(
        layer_norm_forward_launches() > before,
        "the fused forward did not launch"
    );

    let cpu = Default::default();
    let (rx, rgamma, rbeta, _) = case.inputs::<Ref, 2>(&cpu);
    let expected = layer_norm_reference(rx * 2.0 - 1.0, rgamma, rbeta, EPS) * 3.0 + 0.5;
    let err = rel_err(y, expected.into_data());
    println!("fusion f32 [9, 130] between element-wise ops: y {err:.2e}");
    assert!(err <= FUSED_F32_FORWARD, "forward error {err:e}");
}

/// `Autodiff<Wgpu>`: `loss = Σ layer_norm(x, γ, β) · w`; the gradients of `x`, `γ`, `β` come
/// from one fused backward recorded on the fusion stream.
#[test]
fn autodiff_fusion_matches_reference() {
    type Ad = Autodiff<Wgpu>;
    let dims = [2usize, 3, 1024];
    // `grad_out` of the case serves as the random weight `w`: d loss / d y = w.
    let case = Case::new(&dims, 121);
    let device = WgpuDevice::default();
    let (x, gamma, beta, w) = case.inputs::<Ad, 3>(&device);
    let (x, gamma, beta) = (x.require_grad(), gamma.require_grad(), beta.require_grad());
    let (forward_before, backward_before) = (
        layer_norm_forward_launches(),
        layer_norm_backward_launches(),
    );

    let y = layer_norm(x.clone(), gamma.clone(), beta.clone(), EPS);
    let grads = (y * w).sum().backward();
    let grad = |t: &Tensor<Ad, 1>| t.grad(&grads).expect("tracked").into_data();
    let dx = x.grad(&grads).expect("x is tracked").into_data();
    let (dgamma, dbeta) = (grad(&gamma), grad(&beta));
    assert!(
        layer_norm_forward_launches() > forward_before,
        "the fused forward did not launch"
    );
    assert!(
        layer_norm_backward_launches() > backward_before,
        "the fused backward did not launch"
    );

    let cpu = Default::default();
    let (rx, rgamma, _, rw) = case.inputs::<Ref, 3>(&cpu);
    let (rdx, rdgamma, rdbeta) = layer_norm_backward_reference(rx, rgamma, rw, EPS);
    let errs = [
        rel_err(dx, rdx.into_data()),
        rel_err(dgamma, rdgamma.into_data()),
        rel_err(dbeta, rdbeta.into_data()),
    ];
    println!(
        "autodiff fusion f32 {dims:?}: dx {:.2e}, dgamma {:.2e}, dbeta {:.2e}",
        errs[0], errs[1], errs[2]
    );
    for (name, err) in ["dx", "dgamma", "dbeta"].iter().zip(errs) {
        assert!(err <= FUSED_F32_GRADIENT, "{name} error {err:e}");
    }
}

/// One tensor passed as two inputs of the backward (`x` as its own `grad_out`): fusion hands
/// the first use a read-only handle and the last a read-write one, and both must see the data.
#[test]
fn fusion_backward_with_aliased_inputs() {
    let case = Case::new(&[6, 40], 131);
    let device = WgpuDevice::default();
    let (x, gamma, beta, _) = case.inputs::<Wgpu, 2>(&device);
    let (_, mean, rstd) =
        Wgpu::fused_layer_norm_with_stats(prim(x.clone()), prim(gamma.clone()), prim(beta), EPS);
    let (dx, dgamma, dbeta) =
        Wgpu::fused_layer_norm_backward(prim(x.clone()), prim(gamma), prim(x), mean, rstd);

    let cpu = Default::default();
    let (rx, rgamma, _, _) = case.inputs::<Ref, 2>(&cpu);
    let (rdx, rdgamma, rdbeta) = layer_norm_backward_reference(rx.clone(), rgamma, rx, EPS);
    let errs = [
        rel_err(wrap::<Wgpu, 2>(dx).into_data(), rdx.into_data()),
        rel_err(wrap::<Wgpu, 1>(dgamma).into_data(), rdgamma.into_data()),
        rel_err(wrap::<Wgpu, 1>(dbeta).into_data(), rdbeta.into_data()),
    ];
    println!(
        "fusion f32 [6, 40] aliased inputs: dx {:.2e}, dgamma {:.2e}, dbeta {:.2e}",
        errs[0], errs[1], errs[2]
    );
    for (name, err) in ["dx", "dgamma", "dbeta"].iter().zip(errs) {
        assert!(err <= FUSED_F32_GRADIENT, "{name} error {err:e}");
    }
}
