//! `[kernels] batch_norm = true` routes every training-mode batch norm of a ResNet on an acc
//! stack (with the ReLU after it, where there is one) to burnacc's fused batch norm, one
//! autodiff node each with the analytic backward (burnacc's CubeCL kernels on wgpu, its CPU
//! loops on the CPU): the same loss, gradients and running statistics as the model's own Burn
//! ops, with the route's counter (one call per batch norm) and the kernels' counters proving
//! which path ran; and the same again with checkpointed blocks, whose recompute replays the
//! fused op without updating the running statistics twice.

use burn::module::Module;
use burn::nn::loss::CrossEntropyLossConfig;
use burn::tensor::{Int, Tensor, TensorData};
use burnacc_backend::counters;
use burnacc_checkpoint::{CheckpointBackend, CheckpointTape};
use burnacc_fusion::counters::{BATCH_NORM_BACKWARD, BATCH_NORM_FORWARD};
use burnacc_kernels::batch_norm::{batch_norm_backward_launches, batch_norm_forward_launches};
use burnacc_models::{ResNet, ResNetConfig};
use burnacc_tests::rng::HostRng;
use burnacc_tests::tolerance::{OpKind, Pass, Precision, tolerance};
use burnacc_train::recipe::{DeviceSpec, KernelsSection, Mode};
use burnacc_train::stack::{CpuAccBackend, Stack, WgpuAccBackend, route_kernels};
use burnacc_train::trainer::forward_selected;

use crate::common::Collect;

/// ResNet-18's batch norms: the stem's, two per block (8) and three downsampling ones.
const BATCH_NORMS: u64 = 20;

fn values(n: usize, seed: u64) -> Vec<f32> {
    let mut rng = HostRng::new(seed);
    (0..n).map(|_| rng.uniform(-1.0, 1.0)).collect()
}

/// The loss, the parameter gradients and the model's tensors after one forward and backward
/// from the weights of `base`; every block checkpointed when `checkpointed`.
fn step<B: CheckpointBackend>(
    base: &ResNet<B>,
    checkpointed: bool,
    device: &B::Device,
) -> (Vec<f32>, Vec<Vec<f32>>, Vec<Vec<f32>>) {
    let model: ResNet<B> = config()
        .init(device)
        .load_record(base.clone().into_record());
    let images = Tensor::<B, 4>::from_data(
        TensorData::new(values(4 * 3 * 32 * 32, 1), [4, 3, 32, 32]),
        device,
    );
    let labels = Tensor::<B, 1, Int>::from_data(TensorData::new(vec![0i64, 3, 1, 4], [4]), device);
    let mut tape = CheckpointTape::new();
    let logits = if checkpointed {
        forward_selected(&model, images, &mut tape, &|_| true)
    } else {
        model.forward(images)
    };
    let loss = CrossEntropyLossConfig::new()
        .init(device)
        .forward(logits, labels);
    let value = loss.clone().into_data().convert::<f32>().to_vec().unwrap();
    let mut grads = tape.backward(loss, &model);
    let mut collect = Collect::new(&mut grads);
    model.visit(&mut collect);
    (value, collect.gradients, collect.values)
}

fn config() -> ResNetConfig {
    ResNetConfig::resnet18(5).with_base_width(4)
}

/// `max |a − b| ≤ rel · max |b|` for each tensor, `rel` the f32 tolerance of a normalisation's
/// gradient: the analytic backward sums in another order than autodiff's ops, and the
/// gradients of the first layers pass through every batch norm.
fn assert_close(what: &str, a: &[Vec<f32>], b: &[Vec<f32>]) {
    let rel = tolerance(OpKind::Reduction, Precision::F32, Pass::Backward).rel as f32;
    assert_eq!(a.len(), b.len(), "{what}: number of tensors");
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        let scale = y.iter().fold(0f32, |m, v| m.max(v.abs()));
        let diff = x.iter().zip(y).fold(0f32, |m, (p, q)| m.max((p - q).abs()));
        assert!(
            diff <= rel * scale.max(1e-6),
            "{what} {i}: max |diff| {diff} against max |ref| {scale}"
        );
    }
}

/// The routed step equals the plain one, plain and checkpointed; returns the route's calls.
fn routed_equals_plain<B: CheckpointBackend>(stack: Stack, device: &B::Device) -> u64 {
    // Initialized once: clones of a lazily initialized parameter would each draw their own.
    let base = config().init::<B>(device);
    let base = config().init::<B>(device).load_record(base.into_record());
    let (loss, grads, values) = step::<B>(&base, false, device);
    let on = KernelsSection {
        batch_norm: true,
        ..Default::default()
    };
    let calls = || counters::snapshot().kernel("fused_batch_norm");
    let before = calls();
    let _routes = route_kernels(stack, &on).unwrap();
    for checkpointed in [false, true] {
        let (loss_r, grads_r, values_r) = step::<B>(&base, checkpointed, device);
        let what = if checkpointed {
            "checkpointed"
        } else {
            "routed"
        };
        assert_close(&format!("{what} loss"), &[loss_r], &[loss.clone()]);
        // Every parameter got a gradient (20 convolutions and batch norms, the head).
        assert_eq!(grads_r.len(), 62, "{what}");
        assert_close(&format!("{what} gradient"), &grads_r, &grads);
        // Running statistics were updated once, as by the model's own ops.
        assert_close(
            &format!("{what} parameter or statistic"),
            &values_r,
            &values,
        );
    }
    calls() - before
}

#[test]
fn resnet_batch_norms_run_one_autodiff_node_on_wgpu() {
    // The shipped wgpu acc stack.
    let (forward, backward) = (
        batch_norm_forward_launches(),
        batch_norm_backward_launches(),
    );
    let calls = routed_equals_plain::<WgpuAccBackend>(
        Stack::new(Mode::Acc, DeviceSpec::Wgpu),
        &Default::default(),
    );
    // Once per batch norm in the plain step; the checkpointed step runs each block's twice.
    assert_eq!(calls, BATCH_NORMS + (BATCH_NORMS + BATCH_NORMS - 1));
    // Every call ran the CubeCL forward kernels, and each step's backward the kernels once
    // per batch norm.
    assert_eq!(batch_norm_forward_launches() - forward, calls);
    assert_eq!(batch_norm_backward_launches() - backward, 2 * BATCH_NORMS);
}

#[test]
fn resnet_batch_norms_run_one_autodiff_node_on_the_cpu() {
    let (forward, backward) = (BATCH_NORM_FORWARD.get(), BATCH_NORM_BACKWARD.get());
    let calls = routed_equals_plain::<CpuAccBackend>(
        Stack::new(Mode::Acc, DeviceSpec::Cpu),
        &Default::default(),
    );
    assert_eq!(calls, BATCH_NORMS + (BATCH_NORMS + BATCH_NORMS - 1));
    // burnacc's CPU loops ran every call, as the CubeCL kernels do on wgpu.
    assert_eq!(BATCH_NORM_FORWARD.get() - forward, calls);
    assert_eq!(BATCH_NORM_BACKWARD.get() - backward, 2 * BATCH_NORMS);
}
