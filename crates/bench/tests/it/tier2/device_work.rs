//! `device_work`: kernel launches and memory reservations counted from CubeCL's logs, on
//! lavapipe (wgpu), against what Burn is known to run: one kernel per element-wise op on
//! `CubeBackend`, one kernel for the same chain under Burn's fusion, one buffer of the op's
//! output size per result, and a chain of three reductions as three kernels under Burn's
//! fusion and one under burnacc's. Each test runs in its own process (nextest), as `bench` runs
//! each case, because CubeCL's configuration is set once per process.

use burn::backend::wgpu::{CubeBackend, WgpuDevice, WgpuRuntime};
use burn::tensor::backend::Backend;
use burn::tensor::{Tensor, TensorData};
use burnacc_bench::device_work::{
    DeviceWork, LogEvent, classify, count_in_cubecl_logs, counting, install_counter,
    launches_by_kernel, most_launched, parse_bytes, settled,
};
use burnacc_train::kernel_cache::{KernelCaches, configure_cubecl};
use std::collections::HashMap;

type Eager = CubeBackend<WgpuRuntime, f32, i32, u32>;
type Fused = burn::backend::Wgpu;
/// burnacc's CubeCL backend under Burn's fusion, with burnacc's fusion runtime.
type AccFused = burnacc_fusion::Fusion<burnacc_fusion::CubeAcc<WgpuRuntime>>;

/// Elements of each tensor: 4,000 bytes in f32, printed by CubeCL as `4.00 KB`.
const N: usize = 1000;

#[test]
fn cubecl_log_lines_are_classified() {
    assert_eq!(
        classify("Executing KernelBinop | AddOp | WgpuRuntime"),
        LogEvent::Launch
    );
    assert_eq!(
        classify("[Main] Reserved memory 4.00 KB using dynamic pool"),
        LogEvent::Reserved(4000)
    );
    assert_eq!(
        classify("[Main] Reserved memory 1.23 MB using dynamic pool"),
        LogEvent::Reserved(1_230_000)
    );
    assert_eq!(
        classify("[Main] Reserved memory 4096 using persistent memory"),
        LogEvent::Reserved(4096)
    );
    assert_eq!(
        classify("[Main] Reserved memory 512 B using dynamic pool"),
        LogEvent::Reserved(512)
    );
    assert_eq!(
        classify("[Main], Allocated a new memory page, current usage: ..."),
        LogEvent::Other
    );
    assert_eq!(parse_bytes("2.50 GB"), Some(2_500_000_000));
    assert_eq!(parse_bytes("3 XB"), None);
}

#[test]
fn most_launched_kernels_are_the_differences_sorted() {
    let before = HashMap::from([("add".to_owned(), 5), ("exp".to_owned(), 1)]);
    let after = HashMap::from([
        ("add".to_owned(), 6),
        ("exp".to_owned(), 4),
        ("matmul".to_owned(), 2),
        ("sum".to_owned(), 1),
    ]);
    let top = most_launched(&before, &after, 3);
    let expected = [("exp", 3), ("matmul", 2), ("add", 1)].map(|(n, c)| (n.to_owned(), c));
    assert_eq!(top, expected);
}

/// Turns counting on for this process; the test fails if CubeCL was configured before.
fn start_counting() {
    let caches = configure_cubecl(count_in_cubecl_logs);
    assert_ne!(
        caches,
        KernelCaches::AlreadySet,
        "CubeCL configured too early"
    );
    assert!(install_counter(), "another logger is installed");
    assert!(counting());
}

/// Three element-wise ops whose inputs all stay alive (so none runs in place), and the work
/// they did once their inputs are on the device; the results are read back afterwards (a read
/// reserves a staging buffer of its own).
fn three_ops<B: Backend>(device: &B::Device) -> DeviceWork {
    let values: Vec<f32> = (0..N).map(|i| i as f32 / N as f32).collect();
    let a = Tensor::<B, 1>::from_data(TensorData::new(values.clone(), [N]), device);
    let b = Tensor::<B, 1>::from_data(TensorData::new(values, [N]), device);
    B::sync(device).unwrap();
    let before = settled();
    let sum = a.clone() + b.clone();
    let exp = sum.clone().exp();
    let scaled = exp.clone() * 2.0;
    // Every result outlives the chain, so fusion must write all three.
    B::sync(device).unwrap();
    let work = settled().since(before);
    // Element N/2 is 0.5 in both inputs: 2·e^(0.5 + 0.5).
    let expected = 2.0 * 1f32.exp();
    let got = scaled.into_data().as_slice::<f32>().unwrap()[N / 2];
    assert!((got - expected).abs() < 1e-5, "{got} != {expected}");
    drop((a, b, sum, exp));
    work
}

/// Three outputs of 4,000 bytes each, plus each launch's small metadata buffer (shapes and
/// strides, under 256 bytes).
fn assert_three_outputs(work: DeviceWork) {
    let outputs = 3 * 4 * N as u64;
    assert_eq!(work.reservations, 3 + work.launches, "{work:?}");
    assert!(
        work.reserved_bytes >= outputs && work.reserved_bytes < outputs + 256 * work.launches,
        "{work:?}"
    );
}

#[test]
fn eager_cubecl_launches_one_kernel_per_op() {
    start_counting();
    let device = WgpuDevice::default();
    // The first call compiles the kernels; the second is what a training step sees.
    three_ops::<Eager>(&device);
    let kernels = launches_by_kernel();
    let work = three_ops::<Eager>(&device);
    println!("{work:?}");
    assert_eq!(work.launches, 3, "{work:?}");
    // Three different kernels (add, exp, multiply by a scalar), once each.
    let launched = most_launched(&kernels, &launches_by_kernel(), 10);
    assert_eq!(launched.len(), 3, "{launched:?}");
    assert!(launched.iter().all(|(_, n)| *n == 1), "{launched:?}");
    for kernel in ["KernelBinop | AddOp", "KernelScalarBinop | MulOp"] {
        assert!(
            launched.iter().any(|(name, _)| name.starts_with(kernel)),
            "no {kernel} in {launched:?}"
        );
    }
    assert_three_outputs(work);
}

#[test]
fn fused_cubecl_launches_one_kernel_for_the_chain() {
    start_counting();
    let device = WgpuDevice::default();
    three_ops::<Fused>(&device);
    let work = three_ops::<Fused>(&device);
    println!("{work:?}");
    assert_eq!(work.launches, 1, "{work:?}");
    assert_three_outputs(work);
}

#[test]
fn cube_acc_fuses_the_chain_as_burns_fusion_does() {
    start_counting();
    let device = WgpuDevice::default();
    three_ops::<AccFused>(&device);
    let work = three_ops::<AccFused>(&device);
    println!("{work:?}");
    assert_eq!(work.launches, 1, "{work:?}");
    assert_three_outputs(work);
}

/// A batch norm's per-channel sum as autodiff spells it, `sum_dim` over axes 0, 2 and 3 of
/// `[2, 3, 4, 5]`, and the work it did; the sum of channel 1 is checked.
fn per_channel_sum<B: Backend>(device: &B::Device) -> DeviceWork {
    let values: Vec<f32> = (0..120).map(|i| (i % 7) as f32).collect();
    let x = Tensor::<B, 4>::from_data(TensorData::new(values.clone(), [2, 3, 4, 5]), device);
    B::sync(device).unwrap();
    let before = settled();
    let sums = x.sum_dim(0).sum_dim(2).sum_dim(3);
    B::sync(device).unwrap();
    let work = settled().since(before);
    let expected: f32 = (0..120)
        .filter(|i| (i / 20) % 3 == 1)
        .map(|i| values[i])
        .sum();
    let got = sums.into_data().as_slice::<f32>().unwrap()[1];
    assert_eq!(got, expected);
    work
}

#[test]
fn burns_fusion_launches_one_kernel_per_reduction_of_a_chain() {
    start_counting();
    let device = WgpuDevice::default();
    per_channel_sum::<Fused>(&device);
    let work = per_channel_sum::<Fused>(&device);
    println!("{work:?}");
    assert_eq!(work.launches, 3, "{work:?}");
}

#[test]
fn cube_acc_runs_a_reduction_chain_as_one_kernel() {
    start_counting();
    let device = WgpuDevice::default();
    per_channel_sum::<AccFused>(&device);
    let work = per_channel_sum::<AccFused>(&device);
    println!("{work:?}");
    assert_eq!(work.launches, 1, "{work:?}");
}
