//! Where should `Acc` sit: below autodiff (`Autodiff<Acc<B>>`) or above it (`Acc<Autodiff<B>>`)?
//!
//! Measures, for ResNet-50 forward + backward under bf16 autocast on the CPU (Flex), the host
//! heap peak above the step's start (the counting allocator of burnacc-train) and the step time,
//! for both placements and for f32 without autocast. Results and the decision: docs/amp.md.
//!
//! `cargo bench -p burnacc-train --bench amp_placement -- [batch] [steps]`

use burn::backend::autodiff::checkpoint::strategy::BalancedCheckpointing;
use burn::backend::{Autodiff, Flex};
use burn::nn::loss::CrossEntropyLossConfig;
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::{Distribution, FloatDType, Int, Tensor, TensorData};
use burnacc_backend::Acc;
use burnacc_backend::autocast::autocast;
use burnacc_checkpoint::heap::{host_heap, reset_host_peak};
use burnacc_models::{ResNet, ResNetConfig};
use std::time::Instant;

/// Counts host heap bytes so CPU runs can report their peak memory.
#[global_allocator]
static ALLOCATOR: burnacc_checkpoint::heap::CountingAllocator =
    burnacc_checkpoint::heap::CountingAllocator;

type Balanced = BalancedCheckpointing;

/// Whether the autocast guard covers forward only (Acc above autodiff: backward never reaches
/// Acc) or forward and backward (Acc below autodiff: backward ops pass through Acc and may mix
/// dtypes, which autocast's promotion resolves).
#[derive(Clone, Copy)]
enum Guard {
    None,
    Forward,
    ForwardAndBackward,
}

fn measure<B: AutodiffBackend>(name: &str, guard: Guard, batch: usize, steps: usize) {
    let device = Default::default();
    let model: ResNet<B> = ResNetConfig::resnet50(1000).init(&device);
    let loss_fn = CrossEntropyLossConfig::new().init(&device);
    let x = Tensor::<B, 4>::random(
        [batch, 3, 224, 224],
        Distribution::Normal(0.0, 1.0),
        &device,
    );
    let labels: Vec<i64> = (0..batch as i64).collect();
    let y = Tensor::<B, 1, Int>::from_data(TensorData::new(labels, [batch]), &device);
    let mut peaks = Vec::new();
    let mut times = Vec::new();
    for _ in 0..steps {
        reset_host_peak();
        let start = host_heap().0;
        let t = Instant::now();
        let scope = match guard {
            Guard::None => None,
            _ => Some(autocast(FloatDType::BF16).unwrap()),
        };
        let loss = loss_fn.forward(model.forward(x.clone()), y.clone());
        let scope = match guard {
            Guard::Forward => {
                drop(scope);
                None
            }
            _ => scope,
        };
        let grads = loss.backward();
        drop(scope);
        let grad = model
            .conv1
            .weight
            .grad(&grads)
            .expect("conv1 has a gradient");
        let _ = grad.into_data();
        times.push(t.elapsed().as_secs_f64());
        peaks.push((host_heap().1 - start) as f64 / 1e6);
        drop(grads);
    }
    println!(
        "{name:<44} peak {:>8.0} MB  step {:>6.2} s   (per step: {:?} MB, {:?} s)",
        median(&peaks),
        median(&times),
        peaks.iter().map(|p| p.round()).collect::<Vec<_>>(),
        times
            .iter()
            .map(|t| (t * 100.0).round() / 100.0)
            .collect::<Vec<_>>()
    );
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let batch = args.first().copied().unwrap_or(8);
    let steps = args.get(1).copied().unwrap_or(3);
    println!("ResNet-50, 224 px, batch {batch}, forward + backward, Flex, {steps} steps (median)");
    measure::<Acc<Autodiff<Flex, Balanced>>>(
        "f32, Acc<Autodiff<Flex>> (no autocast)",
        Guard::None,
        batch,
        steps,
    );
    measure::<Acc<Autodiff<Flex, Balanced>>>(
        "bf16, Acc above autodiff: Acc<Autodiff<Flex>>",
        Guard::Forward,
        batch,
        steps,
    );
    measure::<Autodiff<Acc<Flex>, Balanced>>(
        "bf16, Acc below autodiff: Autodiff<Acc<Flex>>",
        Guard::ForwardAndBackward,
        batch,
        steps,
    );
}
