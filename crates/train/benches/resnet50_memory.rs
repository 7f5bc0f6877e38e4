//! Activation memory and step time of ResNet-50 with no block checkpointed and with every
//! block checkpointed: one forward + backward per step on the CPU (Flex, mode acc's stack),
//! host heap peak above the step's start (burnacc-train's counting allocator).
//!
//! `cargo bench -p burnacc-checkpoint --bench resnet50_memory -- [batch] [steps]`

use burn::backend::Autodiff;
use burn::backend::autodiff::checkpoint::strategy::BalancedCheckpointing;
use burn::backend::flex::Flex;
use burn::nn::loss::CrossEntropyLossConfig;
use burn::tensor::{Distribution, Int, Tensor, TensorData};
use burnacc_backend::Acc;
use burnacc_checkpoint::CheckpointTape;
use burnacc_checkpoint::heap::{host_heap, reset_host_peak};
use burnacc_models::{ResNet, ResNetConfig};
use burnacc_train::trainer::forward_checkpointed;
use std::time::Instant;

/// Counts host heap bytes so CPU runs can report their peak memory.
#[global_allocator]
static ALLOCATOR: burnacc_checkpoint::heap::CountingAllocator =
    burnacc_checkpoint::heap::CountingAllocator;

type B = Acc<Autodiff<Flex, BalancedCheckpointing>>;

fn step(model: &ResNet<B>, images: Tensor<B, 4>, labels: Tensor<B, 1, Int>, checkpointed: bool) {
    let device = images.device();
    let mut tape = CheckpointTape::new();
    let logits = if checkpointed {
        forward_checkpointed(model, images, &mut tape)
    } else {
        model.forward(images)
    };
    let loss = CrossEntropyLossConfig::new()
        .init(&device)
        .forward(logits, labels);
    let grads = tape.backward(loss, model);
    assert!(!grads.is_empty());
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let batch = args.first().copied().unwrap_or(8);
    let steps = args.get(1).copied().unwrap_or(2);
    let device = Default::default();
    let model: ResNet<B> = ResNetConfig::resnet50(1000).init(&device);
    let images = Tensor::<B, 4>::random(
        [batch, 3, 224, 224],
        Distribution::Normal(0.0, 1.0),
        &device,
    );
    let labels: Vec<i64> = (0..batch as i64).collect();
    let labels = Tensor::<B, 1, Int>::from_data(TensorData::new(labels, [batch]), &device);
    println!(
        "ResNet-50, 224 px, batch {batch}, forward + backward on Acc<Autodiff<Flex>>, median of {steps}"
    );
    let mut base = None;
    for checkpointed in [false, true] {
        let (mut peaks, mut times) = (Vec::new(), Vec::new());
        for _ in 0..steps {
            reset_host_peak();
            let start = host_heap().0;
            let t = Instant::now();
            step(&model, images.clone(), labels.clone(), checkpointed);
            times.push(t.elapsed().as_secs_f64());
            peaks.push((host_heap().1 - start) as f64 / 1e6);
        }
        let (peak, time) = (median(peaks), median(times));
        let (p0, t0) = *base.get_or_insert((peak, time));
        let name = if checkpointed { "every block" } else { "none" };
        println!(
            "{name:<12} peak {peak:>7.0} MB ({:.2}x)  step {time:>6.2} s ({:.2}x)",
            peak / p0,
            time / t0
        );
    }
}
