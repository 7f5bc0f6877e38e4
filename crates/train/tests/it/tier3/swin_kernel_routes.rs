//! `[kernels] window_process = true` and `swin_fmha = true` route a Swin model's window
//! processing and window-attention softmax to burnacc's fused ops: the same logits and
//! gradients as the model's own Burn ops, with the routes' counters (one call per block and
//! direction) and, on wgpu, the CubeCL kernels' launch counters proving which path ran.
//!
//! The model is reduced but keeps every case of the geometry: a 10×10 token map with 4×4
//! windows (padded to 12×12, shifted by 2), then a 5×5 map (padded to 8×8, shifted by 2).

use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::{Tensor, TensorData};
use burnacc_backend::counters;
use burnacc_models::swin::{SwinConfig, SwinTransformer};
use burnacc_tests::rng::HostRng;
use burnacc_train::recipe::KernelsSection;
use burnacc_train::recipe::{DeviceSpec, Mode};
use burnacc_train::stack::Stack;
use burnacc_train::stack::route_kernels;
use burnacc_train::stack::{CpuAccBackend, WgpuAccBackend};

const BATCH: usize = 2;
const IMAGE: usize = 40;
const CLASSES: usize = 5;
/// Blocks of the model: one call per block of each routed op and direction.
const BLOCKS: u64 = 4;

fn config() -> SwinConfig {
    SwinConfig::new(CLASSES)
        .with_img_size(IMAGE)
        .with_embed_dim(16)
        .with_depths(vec![2, 2])
        .with_num_heads(vec![2, 4])
        .with_window_size(4)
        // No stochastic depth: both runs must see the same network.
        .with_drop_path_rate(0.0)
}

fn values(n: usize, seed: u64) -> Vec<f32> {
    let mut rng = HostRng::new(seed);
    (0..n).map(|_| rng.uniform(-1.0, 1.0)).collect()
}

/// Logits and the gradients of `Σ logits ⊙ w` with respect to the input, the first block's
/// relative position bias table and qkv weight, the last block's table, and the patch
/// embedding, each flattened.
fn forward_backward<B: AutodiffBackend>(
    model: &SwinTransformer<B>,
    device: &B::Device,
) -> Vec<(&'static str, Vec<f32>)> {
    let shape = [BATCH, 3, IMAGE, IMAGE];
    let images = Tensor::<B, 4>::from_data(
        TensorData::new(values(shape.iter().product(), 1), shape),
        device,
    )
    .require_grad();
    let w = Tensor::<B, 2>::from_data(
        TensorData::new(values(BATCH * CLASSES, 2), [BATCH, CLASSES]),
        device,
    );
    let logits = model.forward(images.clone());
    let grads = (logits.clone() * w).sum().backward();
    let flat = |t: Tensor<B::InnerBackend, 2>| {
        t.flatten::<1>(0, 1)
            .into_data()
            .convert::<f32>()
            .to_vec::<f32>()
            .unwrap()
    };
    let first = &model.layers[0].blocks[0];
    let last = &model.layers[1].blocks[1];
    vec![
        ("logits", flat(logits.inner())),
        (
            "d images",
            flat(images.grad(&grads).unwrap().flatten::<2>(0, 2)),
        ),
        (
            "d table (first block)",
            flat(
                first
                    .attn
                    .relative_position_bias_table
                    .grad(&grads)
                    .unwrap(),
            ),
        ),
        (
            "d qkv weight (first block)",
            flat(first.attn.qkv.weight.grad(&grads).unwrap()),
        ),
        (
            "d table (last block)",
            flat(last.attn.relative_position_bias_table.grad(&grads).unwrap()),
        ),
        (
            "d patch embedding",
            flat(
                model
                    .patch_embed
                    .proj
                    .weight
                    .grad(&grads)
                    .unwrap()
                    .flatten::<2>(0, 2),
            ),
        ),
    ]
}

fn calls() -> [u64; 3] {
    let c = counters::snapshot();
    [
        c.kernel("fused_window_process"),
        c.kernel("fused_window_process_reverse"),
        c.kernel("fused_swin_fmha"),
    ]
}

/// The model's results with both keys on equal its results with them off.
fn routed_equals_plain<B: AutodiffBackend>(stack: Stack, device: &B::Device) {
    B::seed(device, 7);
    let model = config().init::<B>(device);
    let plain = forward_backward(&model, device);
    let on = KernelsSection {
        window_process: true,
        swin_fmha: true,
        ..Default::default()
    };
    let before = calls();
    let routed = {
        let _routes = route_kernels(stack, &on).unwrap();
        forward_backward(&model, device)
    };
    let after = calls();
    assert_eq!(
        after,
        before.map(|b| b + BLOCKS),
        "one routed call per block and op"
    );
    for ((name, a), (_, b)) in routed.iter().zip(&plain) {
        let scale = b.iter().fold(0f32, |m, v| m.max(v.abs()));
        let diff = a.iter().zip(b).fold(0f32, |m, (p, q)| m.max((p - q).abs()));
        println!("{name}: max |diff| {diff:.2e}, max |ref| {scale:.2e}");
        assert!(
            diff <= 1e-5 * scale,
            "{name}: max |diff| {diff} against max |ref| {scale}"
        );
    }
}

#[test]
fn routed_swin_ops_match_the_models_ops_on_the_cpu() {
    routed_equals_plain::<CpuAccBackend>(
        Stack::new(Mode::Acc, DeviceSpec::Cpu),
        &Default::default(),
    );
}

#[test]
fn routed_swin_ops_run_the_kernels_on_wgpu() {
    use burnacc_kernels::swin_attention::{
        window_softmax_backward_launches, window_softmax_forward_launches,
    };
    use burnacc_kernels::window_process::{
        window_process_launches, window_process_reverse_launches,
    };
    // The shipped wgpu acc stack.
    type Shipped = WgpuAccBackend;
    let device = Default::default();
    let launches = || {
        [
            window_process_launches(),
            window_process_reverse_launches(),
            window_softmax_forward_launches(),
            window_softmax_backward_launches(),
        ]
    };
    let before = launches();
    routed_equals_plain::<Shipped>(Stack::new(Mode::Acc, DeviceSpec::Wgpu), &device);
    Shipped::sync(&device).unwrap();
    let after = launches();
    // Forward and backward: each gather also runs as the other's backward.
    for (i, name) in [
        "window process",
        "window process reverse",
        "softmax forward",
        "softmax backward",
    ]
    .iter()
    .enumerate()
    {
        assert!(
            after[i] >= before[i] + BLOCKS,
            "{name}: {} launches",
            after[i] - before[i]
        );
    }
}
