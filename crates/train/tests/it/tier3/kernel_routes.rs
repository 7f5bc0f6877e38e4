//! `[kernels] layer_norm = true` routes every `nn::LayerNorm` of a model on an acc stack to
//! burnacc's fused LayerNorm, and `quick_gelu` / `bias_gelu` route the model-level fused
//! activations (`burnacc_backend::fused`): the same values and gradients as Burn's ops, with
//! the routes' counters and, on wgpu, the CubeCL kernels' launch counters proving which path
//! ran.

use burn::module::Param;
use burn::nn::{LayerNorm, LayerNormConfig};
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::{Tensor, TensorData};
use burnacc_backend::counters;
use burnacc_kernels::layer_norm::{layer_norm_backward_launches, layer_norm_forward_launches};
use burnacc_tests::rng::HostRng;
use burnacc_train::recipe::KernelsSection;
use burnacc_train::recipe::{DeviceSpec, Mode};
use burnacc_train::stack::Stack;
use burnacc_train::stack::route_kernels;
use burnacc_train::stack::{CpuAccBackend, WgpuAccBackend};

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
    let on = KernelsSection {
        layer_norm: true,
        ..Default::default()
    };
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
    // The shipped wgpu acc stack.
    type Shipped = WgpuAccBackend;
    let device = Default::default();
    let (forward, backward) = (
        layer_norm_forward_launches(),
        layer_norm_backward_launches(),
    );
    let calls = routed_equals_plain::<Shipped>(Stack::new(Mode::Acc, DeviceSpec::Wgpu), &device);
    assert_eq!(calls, 1);
    Shipped::sync(&device).unwrap();
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
    let calls = routed_equals_plain::<CpuAccBackend>(
        Stack::new(Mode::Acc, DeviceSpec::Cpu),
        &Default::default(),
    );
    assert_eq!(calls, 1);
}

#[test]
fn kernels_need_an_acc_stack() {
    let on = KernelsSection {
        layer_norm: true,
        ..Default::default()
    };
    let err = route_kernels(Stack::new(Mode::Eager, DeviceSpec::Cpu), &on)
        .err()
        .expect("eager has no Acc");
    assert!(err.to_string().contains("kernels.layer_norm"), "{err}");
}

/// `fused::quick_gelu` and `fused::bias_gelu` of a model on `B`, value and input gradient,
/// flattened: `[y_quick, dx_quick, y_bias, dx_bias, dbias]`.
fn activations<B: AutodiffBackend>(device: &B::Device) -> Vec<Vec<f32>> {
    use burnacc_backend::fused::{bias_gelu, quick_gelu};
    let shape = [4, 5, 96];
    let n = shape.iter().product();
    let x = Tensor::<B, 3>::from_data(TensorData::new(values(n, 5), shape), device).require_grad();
    let bias =
        Tensor::<B, 1>::from_data(TensorData::new(values(96, 6), [96]), device).require_grad();
    let w = Tensor::<B, 3>::from_data(TensorData::new(values(n, 7), shape), device);
    let quick = quick_gelu(x.clone());
    let grads = (quick.clone() * w.clone()).sum().backward();
    let dx_quick = x.grad(&grads).unwrap();
    let biased = bias_gelu(x.clone(), bias.clone());
    let grads = (biased.clone() * w).sum().backward();
    let flat = |t: Tensor<B::InnerBackend, 3>| {
        t.flatten::<1>(0, 2)
            .into_data()
            .convert::<f32>()
            .to_vec()
            .unwrap()
    };
    vec![
        flat(quick.inner()),
        flat(dx_quick),
        flat(biased.inner()),
        flat(x.grad(&grads).unwrap()),
        bias.grad(&grads)
            .unwrap()
            .into_data()
            .convert::<f32>()
            .to_vec()
            .unwrap(),
    ]
}

fn activations_routed_equal_plain<B: AutodiffBackend>(stack: Stack, device: &B::Device) {
    let plain = activations::<B>(device);
    let on = KernelsSection {
        quick_gelu: true,
        bias_gelu: true,
        ..Default::default()
    };
    let calls = || {
        let c = counters::snapshot();
        (c.kernel("fused_quick_gelu"), c.kernel("fused_bias_gelu"))
    };
    let before = calls();
    let routed = {
        let _routes = route_kernels(stack, &on).unwrap();
        activations::<B>(device)
    };
    assert_eq!(
        calls(),
        (before.0 + 1, before.1 + 1),
        "one routed call each"
    );
    for (name, (a, b)) in ["y quick", "dx quick", "y bias", "dx bias", "dbias"]
        .iter()
        .zip(routed.iter().zip(&plain))
    {
        let scale = b.iter().fold(0f32, |m, v| m.max(v.abs()));
        let diff = a.iter().zip(b).fold(0f32, |m, (p, q)| m.max((p - q).abs()));
        // Burn's own GELU backward differentiates the tanh approximation (up to 7.5e-4 off the
        // exact gradient, which the fused backward computes); everything else agrees to f32.
        let tol = if *name == "dx bias" || *name == "dbias" {
            2e-3
        } else {
            1e-5
        };
        assert!(
            diff <= tol * scale,
            "{name}: max |diff| {diff} against max |ref| {scale}"
        );
    }
}

#[test]
fn routed_activations_match_burns_ops_on_the_cpu() {
    activations_routed_equal_plain::<CpuAccBackend>(
        Stack::new(Mode::Acc, DeviceSpec::Cpu),
        &Default::default(),
    );
}

#[test]
fn routed_activations_run_the_gelu_kernels_on_wgpu() {
    use burnacc_kernels::gelu::{bias_gelu_backward_launches, quick_gelu_forward_launches};
    // The shipped wgpu acc stack.
    type Shipped = WgpuAccBackend;
    let device = Default::default();
    let (quick, bias) = (quick_gelu_forward_launches(), bias_gelu_backward_launches());
    activations_routed_equal_plain::<Shipped>(Stack::new(Mode::Acc, DeviceSpec::Wgpu), &device);
    Shipped::sync(&device).unwrap();
    assert!(
        quick_gelu_forward_launches() > quick,
        "the QuickGELU kernel did not run"
    );
    assert!(
        bias_gelu_backward_launches() > bias,
        "the bias-GELU backward kernel did not run"
    );
}
