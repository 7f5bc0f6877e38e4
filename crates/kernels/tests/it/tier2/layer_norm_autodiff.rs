//! `layer_norm` under `Autodiff<B>`: one graph node whose backward runs the fused kernels,
//! checked against the analytic reference on `NdArray<f64>`.

use burn::backend::wgpu::{CubeBackend, WgpuDevice, WgpuRuntime};
use burn::backend::{Autodiff, NdArray};
use burn::tensor::backend::Backend;
use burn::tensor::{Tensor, TensorData};
use burnacc_kernels::layer_norm::{
    layer_norm, layer_norm_backward_launches, layer_norm_backward_reference,
    layer_norm_forward_launches, layer_norm_reference,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

type Cube = CubeBackend<WgpuRuntime, f32, i32, u32>;
type Ref = NdArray<f64>;

use burnacc_tests::tolerance::{FUSED_F32_FORWARD, FUSED_F32_GRADIENT};

use crate::common::rel_err;

const EPS: f64 = 1e-5;

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

/// Gradients of `Σ layer_norm(x, γ, β) · w` on `Autodiff<B>`, through [`layer_norm`].
fn autodiff_grads<B: burnacc_kernels::layer_norm::LayerNormKernel, const D: usize>(
    dims: [usize; D],
    x: &[f32],
    gamma: &[f32],
    beta: &[f32],
    w: &[f32],
    device: &B::Device,
) -> [TensorData; 4] {
    let width = [dims[D - 1]];
    let x = tensor::<Autodiff<B>, D>(x, dims, device).require_grad();
    let gamma = tensor::<Autodiff<B>, 1>(gamma, width, device).require_grad();
    let beta = tensor::<Autodiff<B>, 1>(beta, width, device).require_grad();
    let w = tensor::<Autodiff<B>, D>(w, dims, device);
    let y = layer_norm(x.clone(), gamma.clone(), beta.clone(), EPS);
    let grads = (y.clone() * w).sum().backward();
    [
        y.into_data(),
        x.grad(&grads).expect("x has a gradient").into_data(),
        gamma
            .grad(&grads)
            .expect("gamma has a gradient")
            .into_data(),
        beta.grad(&grads).expect("beta has a gradient").into_data(),
    ]
}

#[test]
fn autodiff_cube_matches_reference() {
    let dims = [2usize, 3, 1024];
    let numel: usize = dims.iter().product();
    let (x, gamma, beta, w) = (
        values(numel, 61, -1.5, 2.5),
        values(dims[2], 62, 0.5, 1.5),
        values(dims[2], 63, -0.5, 0.5),
        values(numel, 64, -1.0, 1.0),
    );

    let (forward_before, backward_before) = (
        layer_norm_forward_launches(),
        layer_norm_backward_launches(),
    );
    let [y, dx, dgamma, dbeta] =
        autodiff_grads::<Cube, 3>(dims, &x, &gamma, &beta, &w, &WgpuDevice::default());
    assert!(
        layer_norm_forward_launches() > forward_before,
        "fused forward did not launch"
    );
    assert!(
        layer_norm_backward_launches() > backward_before,
        "fused backward did not launch"
    );

    let cpu = Default::default();
    let width = [dims[2]];
    let rx = tensor::<Ref, 3>(&x, dims, &cpu);
    let rgamma = tensor::<Ref, 1>(&gamma, width, &cpu);
    let ry = layer_norm_reference(
        rx.clone(),
        rgamma.clone(),
        tensor::<Ref, 1>(&beta, width, &cpu),
        EPS,
    );
    let (rdx, rdgamma, rdbeta) =
        layer_norm_backward_reference(rx, rgamma, tensor::<Ref, 3>(&w, dims, &cpu), EPS);

    let errs = [
        rel_err(y, ry.into_data()),
        rel_err(dx, rdx.into_data()),
        rel_err(dgamma, rdgamma.into_data()),
        rel_err(dbeta, rdbeta.into_data()),
    ];
    println!(
        "autodiff f32 {dims:?}: y {:.2e}, dx {:.2e}, dgamma {:.2e}, dbeta {:.2e}",
        errs[0], errs[1], errs[2], errs[3]
    );
    assert!(errs[0] <= FUSED_F32_FORWARD, "forward error {:e}", errs[0]);
    for err in &errs[1..] {
        assert!(*err <= FUSED_F32_GRADIENT, "gradient error {err:e}");
    }
}

/// On a CPU backend the node's backward is the reference backward; it must agree with Burn's
/// own autodiff of the decomposed reference forward.
#[test]
fn autodiff_node_matches_decomposed_autodiff() {
    let dims = [4usize, 13];
    let numel = dims[0] * dims[1];
    let (x, gamma, beta, w) = (
        values(numel, 71, -1.5, 2.5),
        values(dims[1], 72, 0.5, 1.5),
        values(dims[1], 73, -0.5, 0.5),
        values(numel, 74, -1.0, 1.0),
    );
    let cpu = Default::default();
    let fused = autodiff_grads::<Ref, 2>(dims, &x, &gamma, &beta, &w, &cpu);

    type Ad = Autodiff<Ref>;
    let width = [dims[1]];
    let ax = tensor::<Ad, 2>(&x, dims, &cpu).require_grad();
    let agamma = tensor::<Ad, 1>(&gamma, width, &cpu).require_grad();
    let abeta = tensor::<Ad, 1>(&beta, width, &cpu).require_grad();
    let y = layer_norm_reference(ax.clone(), agamma.clone(), abeta.clone(), EPS);
    let grads = (y.clone() * tensor::<Ad, 2>(&w, dims, &cpu))
        .sum()
        .backward();
    let decomposed = [
        y.into_data(),
        ax.grad(&grads).unwrap().into_data(),
        agamma.grad(&grads).unwrap().into_data(),
        abeta.grad(&grads).unwrap().into_data(),
    ];
    for (name, (a, e)) in ["y", "dx", "dgamma", "dbeta"]
        .iter()
        .zip(fused.into_iter().zip(decomposed))
    {
        let err = rel_err(a, e);
        assert!(
            err <= 1e-10,
            "{name}: fused node vs decomposed autodiff {err:e}"
        );
    }
}
