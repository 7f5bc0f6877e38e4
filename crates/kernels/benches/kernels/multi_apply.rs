//! `multi_apply` against `multi_apply_multi_stream`: five detection-head-like groups (a matmul,
//! an activation and a reduction each, of different sizes) applied in turn on one thread, and
//! on 2 and 4 threads (streams of their own on CubeCL devices, each synchronised by its
//! thread). What overlaps depends on the device: a GPU can run kernels of several streams at
//! once; lavapipe and the CPU share their cores between the threads.

use burn::tensor::activation::relu;
use burn::tensor::backend::Backend;
use burn::tensor::{Distribution, Tensor};
use burnacc_kernels::multi_apply::{multi_apply, multi_apply_multi_stream};

use crate::timing::{Sync, Timer};

type Group<B> = (Tensor<B, 2>, Tensor<B, 2>);

/// Five groups whose sizes scale with `rows` (the largest has `rows` rows).
fn groups<B: Backend>(rows: usize, device: &B::Device) -> Vec<Group<B>> {
    [1, 2, 4, 8, 16]
        .into_iter()
        .map(|div| {
            let n = (rows / div).max(1);
            let x = Tensor::random([n, 256], Distribution::Normal(0.0, 1.0), device);
            let w = Tensor::random([256, 256], Distribution::Normal(0.0, 1.0), device);
            (x, w)
        })
        .collect()
}

fn head<B: Backend>((x, w): Group<B>) -> Tensor<B, 2> {
    let mean = x.clone().mean();
    relu(x.matmul(w)) - mean.unsqueeze()
}

/// Prints one line per variant: time per application of all groups, and the speed-up over
/// the sequential one.
pub fn bench<B: Backend>(rows: usize, timer: &Timer, device: &B::Device) {
    let sequential = timer.time::<B, _>(device, Sync::EachCall, 0, || {
        multi_apply(head::<B>, groups::<B>(rows, device))
    });
    println!();
    println!("| multi_apply, 5 groups of [≤{rows}, 256] × [256, 256] | ms | speed-up |");
    println!("|---|---:|---:|");
    println!("| sequential | {:.3} | 1.00 |", sequential * 1e3);
    for streams in [2, 4] {
        let concurrent = timer.time::<B, _>(device, Sync::EachCall, 0, || {
            multi_apply_multi_stream::<B, _, _>(
                head::<B>,
                streams,
                groups::<B>(rows, device),
                device,
            )
            .expect("no group fails")
        });
        println!(
            "| {streams} streams | {:.3} | {:.2} |",
            concurrent * 1e3,
            sequential / concurrent
        );
    }
}
