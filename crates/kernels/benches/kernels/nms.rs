//! The NMS family on the device against the host selection it replaces: detection-like boxes
//! (clusters of overlapping boxes around random centres, 80 classes), at two sizes.
//!
//! - **device**: the public function on the benchmarked backend; on CubeCL the IoU bitmask
//!   kernel and the host's greedy pass over it (greedy NMS), or the soft-NMS kernel (one cube
//!   per class);
//! - **host**: what the functions did before the kernels, and still do on the CPU: the boxes
//!   and scores read from the device, the selection by `nms::reference`, the indices uploaded.
//!
//! Each call is synchronised (the results are read back in both paths anyway).

use burn::tensor::backend::Backend;
use burn::tensor::{Int, Tensor, TensorData};
use burnacc_kernels::nms::{
    NmsKernel, SoftNmsConfig, batched_nms, batched_soft_nms, nms, reference,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::timing::{Sync, Timer};

/// `n` boxes in clusters of about 20 around random centres of a 800 × 800 image, scores in
/// (0, 1), 80 classes.
fn boxes<B: Backend>(
    n: usize,
    device: &B::Device,
) -> (Tensor<B, 2>, Tensor<B, 1>, Tensor<B, 1, Int>) {
    let mut rng = StdRng::seed_from_u64(n as u64);
    let mut flat = Vec::with_capacity(n * 4);
    let mut centre = (0.0, 0.0);
    for i in 0..n {
        if i % 20 == 0 {
            centre = (rng.random_range(50.0..750.0), rng.random_range(50.0..750.0));
        }
        let (cx, cy): (f32, f32) = (
            centre.0 + rng.random_range(-8.0..8.0),
            centre.1 + rng.random_range(-8.0..8.0),
        );
        let (w, h): (f32, f32) = (rng.random_range(20.0..80.0), rng.random_range(20.0..80.0));
        flat.extend([cx - w / 2.0, cy - h / 2.0, cx + w / 2.0, cy + h / 2.0]);
    }
    let scores: Vec<f32> = (0..n).map(|_| rng.random_range(0.01..1.0)).collect();
    let classes: Vec<i64> = (0..n).map(|_| rng.random_range(0..80)).collect();
    (
        Tensor::from_data(TensorData::new(flat, [n, 4]), device),
        Tensor::from_data(TensorData::new(scores, [n]), device),
        Tensor::from_data(TensorData::new(classes, [n]), device),
    )
}

/// The host path: inputs read back, selected by the reference, indices uploaded.
fn on_host<B: Backend>(
    (boxes, scores, classes): &(Tensor<B, 2>, Tensor<B, 1>, Tensor<B, 1, Int>),
    select: impl Fn(&[[f32; 4]], &[f32], &[i64]) -> Vec<usize>,
) -> Tensor<B, 1, Int> {
    let flat: Vec<f32> = boxes.to_data().convert::<f32>().to_vec().unwrap();
    let rows: Vec<[f32; 4]> = flat
        .chunks_exact(4)
        .map(|c| [c[0], c[1], c[2], c[3]])
        .collect();
    let scores: Vec<f32> = scores.to_data().convert::<f32>().to_vec().unwrap();
    let classes: Vec<i64> = classes.to_data().convert::<i64>().to_vec().unwrap();
    let kept: Vec<i64> = select(&rows, &scores, &classes)
        .into_iter()
        .map(|i| i as i64)
        .collect();
    let len = kept.len();
    Tensor::from_data(TensorData::new(kept, [len]), &boxes.device())
}

/// Prints one table: per function and size, the device path's and the host path's median
/// time per call, and the ratio.
pub fn bench<B: NmsKernel>(timer: &Timer, device: &B::Device) {
    println!();
    println!("| NMS, clustered boxes, 80 classes | boxes | device ms | host ms | host / device |");
    println!("|---|--:|--:|--:|--:|");
    let soft = SoftNmsConfig::default();
    for n in [1000, 5000] {
        let inputs = boxes::<B>(n, device);
        let (b, s, c) = inputs.clone();
        let rows: [(&str, f64, f64); 3] = [
            (
                "nms 0.5",
                timer.time::<B, _>(device, Sync::EachCall, 0, || {
                    nms(b.clone(), s.clone(), 0.5).unwrap()
                }),
                timer.time::<B, _>(device, Sync::EachCall, 0, || {
                    on_host(&inputs, |b, s, _| reference::nms_host(b, s, 0.5, 0.0))
                }),
            ),
            (
                "batched_nms 0.5",
                timer.time::<B, _>(device, Sync::EachCall, 0, || {
                    batched_nms(b.clone(), s.clone(), c.clone(), 0.5).unwrap()
                }),
                timer.time::<B, _>(device, Sync::EachCall, 0, || {
                    on_host(&inputs, |b, s, c| {
                        let per_class = |b: &[[f32; 4]], s: &[f32]| {
                            let kept = reference::nms_host(b, s, 0.5, 0.0);
                            kept.into_iter().map(|i| (i, ())).collect()
                        };
                        let kept = reference::batched_host(b, s, c, per_class, |i, ()| s[i]);
                        kept.into_iter().map(|(i, ())| i).collect()
                    })
                }),
            ),
            (
                "batched_soft_nms linear",
                timer.time::<B, _>(device, Sync::EachCall, 0, || {
                    batched_soft_nms(b.clone(), s.clone(), c.clone(), soft)
                        .unwrap()
                        .indices
                }),
                timer.time::<B, _>(device, Sync::EachCall, 0, || {
                    on_host(&inputs, |b, s, c| {
                        let per_class = |b: &[[f32; 4]], s: &[f32]| {
                            reference::soft_nms_host(
                                b,
                                s,
                                soft.iou_threshold,
                                soft.sigma,
                                soft.min_score,
                                soft.method,
                                soft.offset,
                            )
                        };
                        let kept = reference::batched_host(b, s, c, per_class, |_, s| s);
                        kept.into_iter().map(|(i, _)| i).collect()
                    })
                }),
            ),
        ];
        for (name, on_device, host) in rows {
            println!(
                "| {name} | {n} | {:.3} | {:.3} | {:.2} |",
                on_device * 1e3,
                host * 1e3,
                host / on_device
            );
        }
    }
}
