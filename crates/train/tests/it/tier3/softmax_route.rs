//! `[kernels] softmax = true` routes every `activation::softmax` of a model on an acc stack to
//! one autodiff node (`burnacc_kernels::softmax`): the same values and gradients as Burn's
//! softmax on the same stack, the route's counter proving each call took it, and the backward
//! kernel's counter (CubeCL launches on wgpu, burnacc's loop on the CPU) proving the node's
//! backward ran. BERT's attention is the model that calls it: `[batch, heads, tokens,
//! tokens]` scores over the keys.

use burn::tensor::activation::softmax;
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::{Tensor, TensorData};
use burnacc_backend::counters;
use burnacc_fusion::counters::WINDOW_SOFTMAX_BACKWARD;
use burnacc_kernels::swin_attention::window_softmax_backward_launches;
use burnacc_tests::rng::HostRng;
use burnacc_tests::tolerance::FUSED_ELEMENTWISE_F32;
use burnacc_train::recipe::{DeviceSpec, KernelsSection, Mode};
use burnacc_train::stack::{CpuAccBackend, Stack, WgpuAccBackend, route_kernels};

/// The two softmaxes' values and the gradient of `sum(softmax(x) ⊙ w)` summed over both, for
/// attention-shaped scores `x`: over the keys, then over the heads as the last dimension of a
/// transposed view (a strided input), flattened.
fn attention_softmaxes<B: AutodiffBackend>(device: &B::Device) -> Vec<Vec<f32>> {
    let shape = [2, 3, 13, 13];
    let n = shape.iter().product();
    let scores = Tensor::<B, 4>::from_data(
        TensorData::new(HostRng::new(1).uniform_vec(n, -4.0, 4.0), shape),
        device,
    )
    .require_grad();
    let w = Tensor::<B, 4>::from_data(
        TensorData::new(HostRng::new(2).uniform_vec(n, -1.0, 1.0), shape),
        device,
    );
    let over_keys = softmax(scores.clone(), 3);
    let over_heads = softmax(scores.clone().swap_dims(1, 3), 3).swap_dims(1, 3);
    let loss = (over_keys.clone() * w.clone()).sum() + (over_heads.clone() * w).sum();
    let grads = loss.backward();
    let flat = |t: Tensor<B::InnerBackend, 4>| {
        t.flatten::<1>(0, 3)
            .into_data()
            .convert::<f32>()
            .to_vec()
            .unwrap()
    };
    vec![
        flat(over_keys.inner()),
        flat(over_heads.inner()),
        flat(scores.grad(&grads).unwrap()),
    ]
}

/// Runs the softmaxes routed and plain on `B`, checks that they agree and that the route took
/// both calls, and only while installed.
fn routed_equals_plain<B: AutodiffBackend>(stack: Stack, device: &B::Device) {
    let plain = attention_softmaxes::<B>(device);
    let on = KernelsSection {
        softmax: true,
        ..Default::default()
    };
    let calls = || counters::snapshot().kernel("fused_softmax");
    let before = calls();
    let routed = {
        let _routes = route_kernels(stack, &on).unwrap();
        attention_softmaxes::<B>(device)
    };
    assert_eq!(calls() - before, 2, "both softmaxes take the route");
    for (name, (a, b)) in ["y over keys", "y over heads", "dx"]
        .iter()
        .zip(routed.iter().zip(&plain))
    {
        let scale = b.iter().fold(0f32, |m, v| m.max(v.abs()));
        let diff = a.iter().zip(b).fold(0f32, |m, (p, q)| m.max((p - q).abs()));
        assert!(
            f64::from(diff) <= FUSED_ELEMENTWISE_F32 * f64::from(scale),
            "{name}: max |diff| {diff} against max |ref| {scale}"
        );
    }
    // The route ends with its guard.
    attention_softmaxes::<B>(device);
    assert_eq!(calls() - before, 2);
}

#[test]
fn the_route_runs_the_backward_kernel_on_wgpu() {
    type Shipped = WgpuAccBackend;
    let device = Default::default();
    let launches = window_softmax_backward_launches();
    routed_equals_plain::<Shipped>(Stack::new(Mode::Acc, DeviceSpec::Wgpu), &device);
    Shipped::sync(&device).unwrap();
    assert_eq!(
        window_softmax_backward_launches() - launches,
        2,
        "one backward kernel per routed softmax"
    );
}

#[test]
fn the_route_runs_the_backward_loop_on_the_cpu() {
    let backward = WINDOW_SOFTMAX_BACKWARD.get();
    routed_equals_plain::<CpuAccBackend>(
        Stack::new(Mode::Acc, DeviceSpec::Cpu),
        &Default::default(),
    );
    assert_eq!(
        WINDOW_SOFTMAX_BACKWARD.get() - backward,
        2,
        "one backward pass per routed softmax"
    );
}
