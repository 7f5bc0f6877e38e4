//! `Fusion<CubeAcc<R>>` reads a reduction chain's `swap_dims` / `reshape` prologue in place (a
//! batch norm's statistics, `x.swap_dims(0, 1).reshape([C, N·H·W]).mean_dim(1)`, without the
//! copy the reshape of the swapped view makes), and runs a convolution that leads a block alone
//! so that the batch norm behind it fuses. On lavapipe, against the same ops on `NdArray<f64>`;
//! the counters prove which path ran, including the op-by-op fallback for reshapes that are not
//! merges of the swapped axes.

use crate::readings::growth;
use crate::relative::{assert_within, relative_error};
use crate::synced::uniform;
use burn::backend::wgpu::WgpuRuntime;
use burn::backend::{Autodiff, NdArray};
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::{BatchNorm, BatchNormConfig, PaddingConfig2d};
use burn::tensor::Tensor;
use burn::tensor::backend::AutodiffBackend;
use burnacc_fusion::counters::{
    CUBE_MODULE_OP_ALONE, CUBE_SUM_CHAIN, CUBE_SUM_CHAIN_UNFUSED, CUBE_SUM_CHAIN_VIEWS,
};
use burnacc_fusion::{CubeAcc, Fusion};
use burnacc_kernels::sum_axes::sum_axes_launches;
use burnacc_tests::tolerance::{FUSED_F32_FORWARD, FUSED_F32_GRADIENT};

type Acc = Fusion<CubeAcc<WgpuRuntime>>;
type Ref = NdArray<f64>;

/// Counter readings: chains run fused, of them led by a view, chains run op by op, `sum_axes`
/// kernels launched.
fn counts() -> [u64; 4] {
    [
        CUBE_SUM_CHAIN.get(),
        CUBE_SUM_CHAIN_VIEWS.get(),
        CUBE_SUM_CHAIN_UNFUSED.get(),
        sum_axes_launches(),
    ]
}

/// Runs `chain` on an input of `shape` (permuted by `permutation` first: a strided view) on both
/// backends; checks the values and the counters (each test runs in a process of its own, so the
/// differences are exactly this test's).
fn check<const D: usize, const E: usize>(
    what: &str,
    shape: [usize; D],
    permutation: [usize; D],
    chain: fn(Tensor<Acc, D>) -> Tensor<Acc, E>,
    reference: fn(Tensor<Ref, D>) -> Tensor<Ref, E>,
    expected_counts: [u64; 4],
) {
    let x = uniform::<Acc, D>(3, shape).permute(permutation);
    let before = counts();
    let got = chain(x);
    let error = relative_error(
        what,
        got,
        reference(uniform::<Ref, D>(3, shape).permute(permutation)),
    );
    assert_eq!(
        growth(counts, before),
        expected_counts,
        "{what}: [chains, views, op by op, kernels]"
    );
    println!("{what}: relative error {error:e}");
    assert!(
        error <= FUSED_F32_FORWARD,
        "{what}: relative error {error:e}"
    );
}

#[test]
fn batch_norm_statistics_read_the_activation_in_place() {
    // [N, C, H, W] = [3, 5, 7, 9]: the mean over N·H·W = 189 elements per channel.
    check(
        "swap_dims(0, 1).reshape([C, N·H·W]).mean_dim(1)",
        [3, 5, 7, 9],
        [0, 1, 2, 3],
        |x| x.swap_dims(0, 1).reshape([5, 189]).mean_dim(1),
        |x| x.swap_dims(0, 1).reshape([5, 189]).mean_dim(1),
        [1, 1, 0, 1],
    );
    // `nn::BatchNorm` reshapes the statistics to [1, C, 1, 1]: part of the chain, no kernel.
    check(
        "swap_dims(0, 1).reshape([C, N·H·W]).mean_dim(1).reshape([1, C, 1, 1])",
        [3, 5, 7, 9],
        [0, 1, 2, 3],
        |x| {
            x.swap_dims(0, 1)
                .reshape([5, 189])
                .mean_dim(1)
                .reshape([1, 5, 1, 1])
        },
        |x| {
            x.swap_dims(0, 1)
                .reshape([5, 189])
                .mean_dim(1)
                .reshape([1, 5, 1, 1])
        },
        [1, 1, 0, 1],
    );
}

#[test]
fn statistics_of_a_strided_activation_and_a_partial_merge() {
    // A permuted input (storage [7, 3, 9, 5]), and a reshape that merges only N and H.
    check(
        "strided: swap_dims(0, 1).reshape([C, N·H, W]).sum_dim(1).mean_dim(2)",
        [7, 3, 9, 5],
        [1, 3, 0, 2],
        |x| x.swap_dims(0, 1).reshape([5, 21, 9]).sum_dim(1).mean_dim(2),
        |x| x.swap_dims(0, 1).reshape([5, 21, 9]).sum_dim(1).mean_dim(2),
        [1, 1, 0, 1],
    );
}

#[test]
fn reshapes_that_split_an_axis_run_op_by_op() {
    // [4, 6] swapped is [6, 4]; [3, 8] splits its first axis: no reduction of the input matches.
    check(
        "swap_dims(0, 1).reshape([3, 8]).mean_dim(1)",
        [4, 6],
        [0, 1],
        |x| x.swap_dims(0, 1).reshape([3, 8]).mean_dim(1),
        |x| x.swap_dims(0, 1).reshape([3, 8]).mean_dim(1),
        [0, 0, 1, 0],
    );
}

#[test]
fn kept_axes_out_of_the_input_order_run_op_by_op() {
    // [4, 3, 2] with axes 0 and 2 swapped is [2, 3, 4]; keeping [3, 4] merged keeps the input's
    // axes 1 and 0 in that order: the output is a transposition of the input's reduced layout.
    check(
        "swap_dims(0, 2).reshape([2, 12]).mean_dim(0)",
        [4, 3, 2],
        [0, 1, 2],
        |x| x.swap_dims(0, 2).reshape([2, 12]).mean_dim(0),
        |x| x.swap_dims(0, 2).reshape([2, 12]).mean_dim(0),
        [0, 0, 1, 0],
    );
    // Keeping the input's axis 2 alone is in order: one reduction over axes 0 and 1.
    check(
        "swap_dims(0, 2).reshape([2, 12]).sum_dim(1)",
        [4, 3, 2],
        [0, 1, 2],
        |x| x.swap_dims(0, 2).reshape([2, 12]).sum_dim(1),
        |x| x.swap_dims(0, 2).reshape([2, 12]).sum_dim(1),
        [1, 1, 0, 1],
    );
}

/// A convolution, then `nn::BatchNorm` in training, then ReLU; the loss weights the output.
/// Returns the output and the gradients of the input, the kernel, γ and β.
fn conv_batch_norm<B: AutodiffBackend>() -> [Tensor<B::InnerBackend, 4>; 5] {
    let device = Default::default();
    let conv: Conv2d<B> = Conv2dConfig::new([3, 6], [3, 3])
        .with_padding(PaddingConfig2d::Explicit(1, 1, 1, 1))
        .with_bias(false)
        .init(&device);
    let kernel = uniform::<B, 4>(21, [6, 3, 3, 3]);
    let conv = Conv2d {
        weight: burn::module::Param::from_tensor(kernel),
        ..conv
    };
    let norm: BatchNorm<B> = BatchNormConfig::new(6).init(&device);
    let norm = BatchNorm {
        gamma: burn::module::Param::from_tensor(uniform::<B, 1>(22, [6])),
        beta: burn::module::Param::from_tensor(uniform::<B, 1>(23, [6])),
        ..norm
    };
    let x = uniform::<B, 4>(24, [3, 3, 7, 5]).require_grad();
    let w = uniform::<B, 4>(25, [3, 6, 7, 5]);
    let y = burn::tensor::activation::relu(norm.forward(conv.forward(x.clone())));
    let grads = (y.clone() * w).sum().backward();
    [
        y.inner(),
        x.grad(&grads).expect("dx"),
        conv.weight.val().grad(&grads).expect("dkernel"),
        norm.gamma
            .val()
            .grad(&grads)
            .expect("dgamma")
            .unsqueeze::<4>(),
        norm.beta
            .val()
            .grad(&grads)
            .expect("dbeta")
            .unsqueeze::<4>(),
    ]
}

#[test]
fn a_convolution_then_batch_norm_fuses_and_equals_the_reference() {
    let before = counts();
    let alone_before = CUBE_MODULE_OP_ALONE.get();
    let got = conv_batch_norm::<Autodiff<Acc>>();
    let expected = conv_batch_norm::<Autodiff<Ref>>();
    let names = ["y", "dx", "dkernel", "dgamma", "dbeta"];
    for ((got, expected), name) in got.into_iter().zip(expected).zip(names) {
        let tolerance = if name == "y" {
            FUSED_F32_FORWARD
        } else {
            FUSED_F32_GRADIENT
        };
        assert_within(name, got, expected, tolerance);
    }
    let [_, views, unfused, _] = growth(counts, before);
    // The batch norm's mean and variance, each from the swapped view of a convolution's output.
    assert_eq!(views, 2, "statistics read in place");
    assert_eq!(unfused, 0, "chains run op by op");
    assert!(
        CUBE_MODULE_OP_ALONE.get() > alone_before,
        "no convolution ran alone"
    );
}
