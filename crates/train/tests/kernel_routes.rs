//! `[kernels] layer_norm = true` routes every `nn::LayerNorm` of a model on an acc stack to
//! burnacc's fused LayerNorm: the same values and gradients as Burn's `layer_norm`, with the
//! route's counter and, on wgpu, the CubeCL kernels' launch counters proving which path ran.

use burn::backend::autodiff::checkpoint::strategy::BalancedCheckpointing;
use burn::backend::{Autodiff, Flex, Wgpu};
use burn::module::Param;
use burn::nn::{LayerNorm, LayerNormConfig};
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::{Tensor, TensorData};
use burnacc_backend::{Acc, counters};
use burnacc_kernels::layer_norm::{layer_norm_backward_launches, layer_norm_forward_launches};
use burnacc_tests::rng::HostRng;
use burnacc_train::kernel_routes::route_kernels;
use burnacc_train::recipe::KernelsSection;
use burnacc_train::stack::Stack;

fn values(n: usize, seed: u64) -> Vec<f32> {
    let mut rng = HostRng::new(seed);
    (0..n).map(|_| rng.uniform(-2.0, 2.0)).collect()
}

/// y = layer_norm(x) and the gradients of `sum(y ⊙ w)` with respect to x, gamma and beta,
/// flattened: `[y, dx, dgamma, dbeta]`.
fn forward_backward<B: AutodiffBackend>(device: &B::Device) -> Vec<Vec<f32>> {
    let [batch, tokens, width] = [3, 7, 96];
    let mut norm: LayerNorm<B> = LayerNormConfig::new(width).init(device);
    norm.gamma = Param::from_tensor(Tensor::from_data(
        TensorData::new(values(width, 1), [width]),
        device,
    ));
    norm.beta = norm.beta.map(|_| {
        Param::from_tensor(Tensor::from_data(
            TensorData::new(values(width, 2), [width]),
            device,
        ))
    });
    let shape = [batch, tokens, width];
    let x = Tensor::<B, 3>::from_data(
        TensorData::new(values(batch * tokens * width, 3), shape),
        device,
    )
    .require_grad();
    let w = Tensor::<B, 3>::from_data(
        TensorData::new(values(batch * tokens * width, 4), shape),
        device,
    );
    let y = norm.forward(x.clone());
    let grads = (y.clone() * w).sum().backward();
    let flat = |t: Tensor<B::InnerBackend, 1>| t.into_data().convert::<f32>().to_vec().unwrap();
    vec![
        flat(y.inner().flatten(0, 2)),
        flat(x.grad(&grads).unwrap().flatten(0, 2)),
        flat(norm.gamma.grad(&grads).unwrap()),
        flat(norm.beta.as_ref().unwrap().grad(&grads).unwrap()),
    ]
}

fn assert_close(routed: &[Vec<f32>], plain: &[Vec<f32>]) {
    for (name, (a, b)) in ["y", "dx", "dgamma", "dbeta"]
        .iter()
        .zip(routed.iter().zip(plain))
    {
        let scale = b.iter().fold(0f32, |m, v| m.max(v.abs()));
        let diff = a.iter().zip(b).fold(0f32, |m, (p, q)| m.max((p - q).abs()));
        assert!(
            diff <= 1e-4 * scale,
            "{name}: max |diff| {diff} against max |ref| {scale}"
        );
    }
}

fn routed_equals_plain<B: AutodiffBackend>(stack: Stack, device: &B::Device) -> u64 {
    let plain = forward_backward::<B>(device);
    let on = KernelsSection { layer_norm: true, ..Default::default() };
    let before = counters::snapshot().kernel("fused_layer_norm");
    let routed = {
        let _routes = route_kernels(stack, &on).unwrap();
        forward_backward::<B>(device)
    };
    let calls = counters::snapshot().kernel("fused_layer_norm") - before;
    assert_close(&routed, &plain);
    // The route ends with its guard.
    forward_backward::<B>(device);
    assert_eq!(
        counters::snapshot().kernel("fused_layer_norm") - before,
        calls
    );
    calls
}

#[test]
fn the_route_runs_the_fused_kernels_on_wgpu() {
    type Inner = Autodiff<Wgpu, BalancedCheckpointing>;
    let device = Default::default();
    let (forward, backward) = (
        layer_norm_forward_launches(),
        layer_norm_backward_launches(),
    );
    let calls = routed_equals_plain::<Acc<Inner>>(Stack::WgpuAcc, &device);
    assert_eq!(calls, 1);
    Inner::sync(&device).unwrap();
    assert!(
        layer_norm_forward_launches() > forward,
        "the forward kernel did not run"
    );
    assert!(
        layer_norm_backward_launches() > backward,
        "the backward kernel did not run"
    );
}

#[test]
fn the_route_runs_one_autodiff_node_on_the_cpu() {
    type Inner = Autodiff<Flex, BalancedCheckpointing>;
    let calls = routed_equals_plain::<Acc<Inner>>(Stack::CpuAcc, &Default::default());
    assert_eq!(calls, 1);
}

#[test]
fn kernels_need_an_acc_stack() {
    let on = KernelsSection { layer_norm: true, ..Default::default() };
    let err = route_kernels(Stack::CpuEager, &on)
        .err()
        .expect("eager has no Acc");
    assert!(err.to_string().contains("kernels.layer_norm"), "{err}");
}
