//! `Fusion<CubeAcc<R>>` runs a reshape that Burn's element-wise fuser closes on ahead of the
//! kernel (the `[1, C, 1, 1] → [C]` of a batch norm's running averages), and takes a
//! reduction over an axis of size 1 (Burn's backward of `mean_dim`) as an assignment. On
//! lavapipe, against the same ops on `NdArray<f64>`; the counters prove which path ran.

use crate::readings::growth;
use crate::relative::assert_within;
use crate::synced::uniform;
use burn::backend::wgpu::WgpuRuntime;
use burn::backend::{Autodiff, NdArray};
use burn::tensor::Tensor;
use burn::tensor::backend::{AutodiffBackend, Backend};
use burnacc_fusion::counters::{
    CUBE_ELEMENTWISE_RESHAPES_AHEAD, CUBE_ELEMENTWISE_UNIT_REDUCTIONS, CUBE_ELEMENTWISE_VIEWS,
};
use burnacc_fusion::{CubeAcc, Fusion};
use burnacc_tests::tolerance::{FUSED_F32_FORWARD, FUSED_F32_GRADIENT};

type Acc = Fusion<CubeAcc<WgpuRuntime>>;
type Ref = NdArray<f64>;

/// Counter readings: kernels run, reshapes run ahead, reductions taken as assignments.
fn counts() -> [u64; 3] {
    [
        CUBE_ELEMENTWISE_VIEWS.get(),
        CUBE_ELEMENTWISE_RESHAPES_AHEAD.get(),
        CUBE_ELEMENTWISE_UNIT_REDUCTIONS.get(),
    ]
}

/// A batch norm's running-mean update as burnacc's `BatchNorm` writes it:
/// `0.9 · running + 0.1 · mean.reshape([C])`, with `mean` of shape `[1, C, 1, 1]` from an
/// earlier segment (in a network, the normalisation's kernels run in between).
fn running_mean_update<B: Backend>() -> Tensor<B, 1> {
    let mean = uniform::<B, 4>(1, [1, 5, 1, 1]);
    let running = uniform::<B, 1>(2, [5]);
    running
        .mul_scalar(0.9)
        .add(mean.reshape([5]).mul_scalar(0.1))
}

#[test]
fn a_running_average_reads_the_statistic_through_a_reshape_run_ahead() {
    let before = counts();
    let got = running_mean_update::<Acc>();
    assert_within(
        "running mean",
        got,
        running_mean_update::<Ref>(),
        FUSED_F32_FORWARD,
    );
    // One kernel for both scalings and the sum, behind `mean.reshape([C])`.
    assert_eq!(
        growth(counts, before),
        [1, 1, 0],
        "[kernels, ahead, unit reductions]"
    );
}

/// `loss = Σ w · mean_dim(x, 1)`; returns the gradient of `x`.
fn mean_dim_gradient<B: AutodiffBackend>() -> Tensor<B::InnerBackend, 2> {
    let x = uniform::<B, 2>(2, [6, 9]).require_grad();
    let w = uniform::<B, 2>(3, [6, 1]);
    let grads = (x.clone().mean_dim(1) * w).sum().backward();
    x.grad(&grads).expect("dx")
}

#[test]
fn the_gradient_of_mean_dim_takes_its_unit_reduction_into_the_kernel() {
    let before = counts();
    let got = mean_dim_gradient::<Autodiff<Acc>>();
    assert_within(
        "dx",
        got,
        mean_dim_gradient::<Autodiff<Ref>>(),
        FUSED_F32_GRADIENT,
    );
    let [kernels, _, unit] = growth(counts, before);
    assert!(unit >= 1, "unit reductions as assignments: {unit}");
    assert!(kernels >= 1, "kernels: {kernels}");
}

#[test]
fn a_reshape_of_a_strided_input_runs_ahead_as_a_copy() {
    // A swapped view, executed before the block: the reshape that lowers its rank copies.
    let x = uniform::<Acc, 2>(4, [4, 3]).swap_dims(0, 1);
    Acc::sync(&Default::default()).expect("the device syncs");
    let before = counts();
    let got = (x.reshape([12]) * 2.0).add_scalar(1.0);
    let expected =
        (uniform::<Ref, 2>(4, [4, 3]).swap_dims(0, 1).reshape([12]) * 2.0).add_scalar(1.0);
    assert_within("2x + 1", got, expected, FUSED_F32_FORWARD);
    assert_eq!(
        growth(counts, before),
        [1, 1, 0],
        "[kernels, ahead, unit reductions]"
    );
}

#[test]
fn a_reshape_that_frees_what_the_kernel_reads_does_not_run_ahead() {
    // `a` is read by `a · 2` and then, for the last time, by its reshape; `+ 1` continues the
    // kernel after it. Run ahead, the reshape would free `a` before the kernel reads it.
    let run = |a: Tensor<Acc, 4>| {
        let doubled = a.clone() * 2.0;
        let flat = a.reshape([6]);
        (doubled.add_scalar(1.0), flat * 3.0)
    };
    let a = uniform::<Acc, 4>(5, [1, 6, 1, 1]);
    let before = counts();
    let (doubled, flat) = run(a);
    let reference = uniform::<Ref, 4>(5, [1, 6, 1, 1]);
    assert_within(
        "2a + 1",
        doubled,
        (reference.clone() * 2.0).add_scalar(1.0),
        FUSED_F32_FORWARD,
    );
    assert_within("3 a", flat, reference.reshape([6]) * 3.0, FUSED_F32_FORWARD);
    assert_eq!(growth(counts, before)[1], 0, "reshapes run ahead");
}
