//! `Fusion<CubeAcc<R>>` runs chains of `sum_dim` / `mean_dim` as one multi-axis reduction
//! (burnacc's sum-chain fuser and the `sum_axes` kernel), on lavapipe: the results against the
//! same ops on `NdArray<f64>`, with odd sizes and permuted (strided) inputs, forward and through
//! autodiff, where every broadcast operand's gradient is such a chain; the counters prove the
//! chain ran fused, and that a chain whose intermediate is still needed is left alone.

use crate::readings::growth;
use crate::relative::{assert_within, relative_error};
use burn::backend::wgpu::WgpuRuntime;
use burn::backend::{Autodiff, NdArray};
use burn::tensor::backend::Backend;
use burn::tensor::{Tensor, TensorData};
use burnacc_fusion::counters::{CUBE_SUM_CHAIN, CUBE_SUM_CHAIN_OPS};
use burnacc_fusion::{CubeAcc, Fusion};
use burnacc_kernels::sum_axes::{sum_axes_launches, sum_axes_split_launches};
use burnacc_tests::rng::HostRng;
use burnacc_tests::tolerance::{FUSED_F16_STORAGE, FUSED_F32_FORWARD, FUSED_F32_GRADIENT};

type Acc = Fusion<CubeAcc<WgpuRuntime>>;
type Ref = NdArray<f64>;

/// `[3, 7, 9, 5]` uniform values in [-2, 2), permuted to `[5, 3, 7, 9]`: a strided view whose
/// innermost axis is not the storage's.
fn strided<B: Backend>(seed: u64) -> Tensor<B, 4> {
    strided_from::<B>(seed, |data| data)
}

/// [`strided`], the values passed through `round` (f32 data in) first.
fn strided_from<B: Backend>(seed: u64, round: fn(TensorData) -> TensorData) -> Tensor<B, 4> {
    let shape = [3, 7, 9, 5];
    let values = HostRng::new(seed).uniform_vec(shape.iter().product(), -2.0, 2.0);
    let data = round(TensorData::new(values, shape.to_vec())).convert::<B::FloatElem>();
    Tensor::<B, 4>::from_data(data, &Default::default()).permute([3, 0, 1, 2])
}

/// Counter readings: chains run, reductions inside them, `sum_axes` kernels launched.
fn counts() -> [u64; 3] {
    [
        CUBE_SUM_CHAIN.get(),
        CUBE_SUM_CHAIN_OPS.get(),
        sum_axes_launches(),
    ]
}

/// Each test runs in a process of its own (cargo-nextest), so the counters' differences are
/// exactly this test's.
fn check_chain<F, G>(what: &str, acc: F, reference: G, expected_counts: [u64; 3])
where
    F: Fn(Tensor<Acc, 4>) -> Tensor<Acc, 4>,
    G: Fn(Tensor<Ref, 4>) -> Tensor<Ref, 4>,
{
    let before = counts();
    let got = acc(strided::<Acc>(7));
    let got_values = got.clone();
    let error = relative_error(what, got_values, reference(strided::<Ref>(7)));
    assert_eq!(
        growth(counts, before),
        expected_counts,
        "{what}: [chains, reductions, kernels]"
    );
    assert!(
        error <= FUSED_F32_FORWARD,
        "{what}: relative error {error:e}"
    );
    println!("{what}: relative error {error:e}");
}

#[test]
fn sum_dim_chains_on_strided_inputs_equal_the_unfused_reductions() {
    check_chain(
        "sum over 0, 2, 3 (a batch norm's per-channel sum)",
        |x| x.sum_dim(0).sum_dim(2).sum_dim(3),
        |x| x.sum_dim(0).sum_dim(2).sum_dim(3),
        [1, 3, 1],
    );
}

#[test]
fn mean_and_sum_mixed_and_in_any_axis_order() {
    check_chain(
        "mean over 3, then sum over 1",
        |x| x.mean_dim(3).sum_dim(1),
        |x| x.mean_dim(3).sum_dim(1),
        [1, 2, 1],
    );
}

#[test]
fn every_axis_and_an_axis_twice() {
    check_chain(
        "sum over 1, 0, 2, 3, then mean over 2 again (size 1 by then)",
        |x| x.sum_dim(1).sum_dim(0).sum_dim(2).sum_dim(3).mean_dim(2),
        |x| x.sum_dim(1).sum_dim(0).sum_dim(2).sum_dim(3).mean_dim(2),
        [1, 5, 1],
    );
}

#[test]
fn reductions_over_axes_of_size_one_cost_nothing() {
    // The mean reduces; the two sums over the axis it left with size 1 are free.
    check_chain(
        "mean over 1, then sums over 1",
        |x| x.mean_dim(1).sum_dim(1).sum_dim(1),
        |x| x.mean_dim(1).sum_dim(1).sum_dim(1),
        [1, 3, 1],
    );
    // A lone sum over an axis of size 1 is its input: no kernel, the same values bit for bit.
    let values_in = HostRng::new(5).uniform_vec(24, -2.0, 2.0);
    let x = Tensor::<Acc, 3>::from_data(
        TensorData::new(values_in.clone(), [4, 1, 6]),
        &Default::default(),
    );
    let before = counts();
    let y: Vec<f32> = x.sum_dim(1).into_data().to_vec().unwrap();
    assert_eq!(
        growth(counts, before),
        [1, 1, 0],
        "[chains, reductions, kernels]"
    );
    assert_eq!(y, values_in);
}

#[test]
fn a_chain_whose_intermediate_is_still_needed_is_not_fused() {
    let before = counts();
    let x = strided::<Acc>(11);
    let first = x.sum_dim(0);
    let second = first.clone().sum_dim(2);
    let (first_error, second_error) = {
        let r = strided::<Ref>(11).sum_dim(0);
        (
            relative_error("sum over 0", first, r.clone()),
            relative_error("then over 2", second, r.sum_dim(2)),
        )
    };
    assert_eq!(
        growth(counts, before),
        [0, 0, 0],
        "[chains, reductions, kernels]"
    );
    assert!(first_error <= FUSED_F32_FORWARD, "{first_error:e}");
    assert!(second_error <= FUSED_F32_FORWARD, "{second_error:e}");
}

/// `loss = Σ w · (x · γ + β)` with `γ`, `β` shaped `[1, C, 1, 1]`: their gradients are autodiff's
/// `sum_dim` chains over axes 0, 2 and 3 of `[N, C, H, W]`.
fn batch_norm_affine<B: burn::tensor::backend::AutodiffBackend>() -> [Tensor<B::InnerBackend, 4>; 3]
{
    let x = strided::<B>(1).require_grad();
    let gamma = strided::<B>(2)
        .slice([0..1, 0..3, 0..1, 0..1])
        .require_grad();
    let beta = strided::<B>(3)
        .slice([0..1, 0..3, 0..1, 0..1])
        .require_grad();
    let w = strided::<B>(4);
    let loss = ((x.clone() * gamma.clone() + beta.clone()) * w).sum();
    let grads = loss.backward();
    [x, gamma, beta].map(|t| t.grad(&grads).expect("a gradient"))
}

#[test]
fn broadcast_gradients_through_autodiff_equal_the_reference() {
    let before = counts();
    let got = batch_norm_affine::<Autodiff<Acc>>();
    let expected = batch_norm_affine::<Autodiff<Ref>>();
    let names = ["dx", "dgamma", "dbeta"];
    let errors: Vec<f64> = got
        .into_iter()
        .zip(expected)
        .zip(names)
        .map(|((g, e), name)| relative_error(name, g, e))
        .collect();
    // dgamma and dbeta: one chain of three reductions each.
    assert_eq!(
        growth(counts, before),
        [2, 6, 2],
        "[chains, reductions, kernels]"
    );
    for (name, error) in names.iter().zip(&errors) {
        println!("{name}: relative error {error:e}");
        assert!(
            *error <= FUSED_F32_GRADIENT,
            "{name}: relative error {error:e}"
        );
    }
}

#[test]
fn f16_storage_accumulates_in_f32() {
    // The same per-channel sum on f16 storage, against the reference fed the f16-rounded
    // inputs: one f16 rounding of the output, whatever the number of terms.
    let x = strided::<Acc>(9).cast(burn::tensor::DType::F16);
    // The cast runs first, on its own: in the same fusion block, an op no fuser takes ahead of
    // the chain makes Burn's stream run the whole block unfused.
    Acc::sync(&Default::default()).expect("the device syncs");
    let before = counts();
    let got = x.sum_dim(0).sum_dim(2).sum_dim(3);
    assert_eq!(
        got.dtype(),
        burn::tensor::DType::F16,
        "the output keeps the input's dtype"
    );
    let rounded = strided_from::<Ref>(9, |data| data.convert::<burn::tensor::f16>());
    let error = relative_error(
        "f16 sum over 0, 2, 3",
        got,
        rounded.sum_dim(0).sum_dim(2).sum_dim(3),
    );
    assert_eq!(
        growth(counts, before),
        [1, 3, 1],
        "[chains, reductions, kernels]"
    );
    println!("f16: relative error {error:e}");
    assert!(error <= FUSED_F16_STORAGE, "relative error {error:e}");
}

#[test]
fn long_reductions_split_over_cubes_equal_the_reference() {
    // 21 · 40 · 30 = 25,200 elements per channel: more than one cube sums alone (16,384), so
    // the kernel sums runs of them in parallel and a second kernel adds the runs.
    fn long<B: Backend>() -> Tensor<B, 4> {
        let shape = [3, 40, 30, 21];
        let values = HostRng::new(13).uniform_vec(shape.iter().product(), -2.0, 2.0);
        let data = TensorData::new(values, shape.to_vec()).convert::<B::FloatElem>();
        Tensor::<B, 4>::from_data(data, &Default::default()).permute([3, 0, 1, 2])
    }
    let before = counts();
    let split_before = sum_axes_split_launches();
    let got = long::<Acc>().sum_dim(0).sum_dim(2).mean_dim(3);
    let expected = long::<Ref>().sum_dim(0).sum_dim(2).mean_dim(3);
    let error = relative_error("per-channel sum of 25,200", got, expected);
    assert_eq!(
        growth(counts, before),
        [1, 3, 1],
        "[chains, reductions, sums]"
    );
    assert_eq!(
        sum_axes_split_launches() - split_before,
        1,
        "the sum was not split"
    );
    println!("long: relative error {error:e}");
    assert!(error <= FUSED_F32_FORWARD, "relative error {error:e}");
}

#[test]
fn contiguous_neighbours_merge_into_one_axis_of_the_kernel() {
    // Contiguous [4, 5, 6, 3] summed over 3 then 2: the kernel sees [20, 18], the kept axes
    // merged and the reduced ones too; the values are those of the unfused sums.
    fn contiguous<B: Backend>() -> Tensor<B, 4> {
        let shape = [4, 5, 6, 3];
        let values = HostRng::new(17).uniform_vec(shape.iter().product(), -2.0, 2.0);
        let data = TensorData::new(values, shape.to_vec()).convert::<B::FloatElem>();
        Tensor::<B, 4>::from_data(data, &Default::default())
    }
    let before = counts();
    let got = contiguous::<Acc>().sum_dim(3).mean_dim(2);
    let expected = contiguous::<Ref>().sum_dim(3).mean_dim(2);
    let error = relative_error("contiguous sum over 3, mean over 2", got, expected);
    assert_eq!(
        growth(counts, before),
        [1, 2, 1],
        "[chains, reductions, kernels]"
    );
    println!("contiguous: relative error {error:e}");
    assert!(error <= FUSED_F32_FORWARD, "relative error {error:e}");
}

#[test]
fn a_chain_leaves_its_input_to_later_readers_in_the_same_segment() {
    // Autodiff's pattern in a Swin block: a broadcast operand's gradient is a chain over `g`,
    // then `g` is multiplied, in the same explored segment. The chain must read `g` with its
    // own status (not the last reader's), or the multiplication finds no buffer.
    fn pattern<B: Backend>() -> [Tensor<B, 4>; 3] {
        let device = Default::default();
        let g = strided::<B>(31);
        let w = strided::<B>(32).slice([0..1, 0..1, 0..1, 0..9]);
        let v = strided::<B>(33);
        B::sync(&device).expect("the device syncs");
        let head = g.clone().sum_dim(0).reshape([3, 7, 9]).unsqueeze::<4>();
        let db = g.clone().sum_dim(0).sum_dim(1).sum_dim(2);
        let dw = (g.clone() * v).sum_dim(0).sum_dim(1).sum_dim(2);
        [head, db, g * w + dw.clone()]
    }
    let before = counts();
    let got = pattern::<Acc>();
    let expected = pattern::<Ref>();
    for ((got, expected), name) in got.into_iter().zip(expected).zip(["head", "db", "dx"]) {
        assert_within(name, got, expected, FUSED_F32_FORWARD);
    }
    let [chains, ..] = growth(counts, before);
    // At least one chain ran fused ahead of a later reader of `g` (the case under test).
    assert!(chains >= 1, "{chains} chains ran fused");
}
