//! `multi_apply_multi_stream` equals `multi_apply` bit for bit, on the CPU and on wgpu (each
//! thread its own CubeCL stream, on Burn's fusion backend), for any number of streams, and
//! reports every group that panicked while the others still finish.

use burn::backend::wgpu::{Wgpu, WgpuDevice};
use burn::backend::{Flex, flex::FlexDevice};
use burn::tensor::activation::relu;
use burn::tensor::backend::Backend;
use burn::tensor::{Distribution, Tensor};
use burnacc_kernels::multi_apply::{multi_apply, multi_apply_multi_stream};

/// A detection-head-like group: a feature map and its weights, odd sizes per level.
type Group<B> = (Tensor<B, 2>, Tensor<B, 2>);

fn groups<B: Backend>(device: &B::Device) -> Vec<Group<B>> {
    B::seed(device, 5);
    [(37, 19), (8, 33), (61, 5), (1, 1), (20, 48)]
        .into_iter()
        .map(|(n, k)| {
            let x = Tensor::random([n, k], Distribution::Normal(0.0, 1.0), device);
            let w = Tensor::random([k, 7], Distribution::Normal(0.0, 1.0), device);
            (x, w)
        })
        .collect()
}

/// `relu(x w) · 2 − x̄`: a matmul, an activation and a reduction per group.
fn head<B: Backend>((x, w): Group<B>) -> Tensor<B, 2> {
    let mean = x.clone().mean();
    relu(x.matmul(w)).mul_scalar(2.0) - mean.unsqueeze()
}

fn bits<B: Backend>(outputs: Vec<Tensor<B, 2>>) -> Vec<Vec<u32>> {
    outputs
        .into_iter()
        .map(|t| {
            let values: Vec<f32> = t.into_data().to_vec().unwrap();
            values.iter().map(|v| v.to_bits()).collect()
        })
        .collect()
}

fn multi_stream_equals_sequential<B: Backend>(device: &B::Device) {
    let sequential = bits(multi_apply(head::<B>, groups::<B>(device)));
    assert_eq!(sequential.len(), 5);
    for streams in [1, 2, 3, 8] {
        let concurrent =
            multi_apply_multi_stream::<B, _, _>(head::<B>, streams, groups::<B>(device), device)
                .unwrap();
        assert_eq!(bits(concurrent), sequential, "{streams} streams");
    }
    let none: Vec<Group<B>> = Vec::new();
    assert!(
        multi_apply_multi_stream::<B, _, _>(head::<B>, 4, none, device)
            .unwrap()
            .is_empty()
    );
}

#[test]
fn multi_stream_equals_sequential_on_flex() {
    multi_stream_equals_sequential::<Flex>(&FlexDevice);
}

#[test]
fn multi_stream_equals_sequential_on_wgpu() {
    multi_stream_equals_sequential::<Wgpu>(&WgpuDevice::default());
}

#[test]
fn every_panicking_group_is_reported_and_the_others_finish() {
    let finished = std::sync::atomic::AtomicUsize::new(0);
    let f = |i: usize| {
        if i % 3 == 1 {
            panic!("level {i} has no anchors");
        }
        finished.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        i * 10
    };
    let err =
        multi_apply_multi_stream::<Flex, _, _>(f, 2, (0..8).collect(), &FlexDevice).unwrap_err();
    assert_eq!(err.groups, 8);
    assert_eq!(
        err.failed,
        [1, 4, 7].map(|i| (i, format!("level {i} has no anchors")))
    );
    assert_eq!(finished.into_inner(), 5, "the other groups ran to the end");
    let message = err.to_string();
    assert!(
        message.contains("3 of 8 groups failed") && message.contains("group 4: level 4"),
        "{message}"
    );
    assert_eq!(
        multi_apply_multi_stream::<Flex, _, _>(|i: usize| i * 10, 3, (0..8).collect(), &FlexDevice)
            .unwrap(),
        (0..8).map(|i| i * 10).collect::<Vec<_>>()
    );
}
