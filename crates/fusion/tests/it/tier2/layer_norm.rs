//! burnacc's LayerNorm kernels on `CpuFlex` (one pass per row each way) against Flex's
//! (the plain-Burn reference of `LayerNormKernel`'s default methods), forward with its
//! statistics and backward, on odd widths and row counts, inputs spread over several parallel
//! tasks, strided and offset views; f64 and bf16 take Flex's path. The counters say which ran.
//!
//! The row sums run in another order (interleaved partial sums, per-task partials of the
//! column sums), so the bounds are the f32 reduction tolerances.

use super::kernel_support::{
    assert_close, assert_identical, cast, columns, counted, normal, offset_view, once, shape,
    transposed, uniform,
};
use burn::backend::Flex;
use burn::backend::flex::FlexTensor;
use burn::tensor::FloatDType;
use burnacc_fusion::CpuFlex;
use burnacc_fusion::counters::{LAYER_NORM_BACKWARD, LAYER_NORM_FORWARD};
use burnacc_kernels::layer_norm::LayerNormKernel;
use burnacc_tests::tolerance::{OpKind, Pass};

const EPS: f64 = 1e-5;

/// `x`, `grad` of `shape` (contiguous), `gamma`, `beta` of its last dimension.
fn inputs(dims: &[usize], seed: u64) -> [FlexTensor; 4] {
    let width = [dims[dims.len() - 1]];
    [
        normal(dims, seed, 1.5),
        uniform(&width, seed + 1, 0.5, 1.5),
        uniform(&width, seed + 2, -0.5, 0.5),
        normal(dims, seed + 3, 1.0),
    ]
}

/// Forward (output, mean, rstd) and backward (dx, dgamma, dbeta) of `CpuFlex` against Flex's
/// on the same inputs; the backward of both gets Flex's statistics.
fn check(what: &str, x: FlexTensor, gamma: FlexTensor, beta: FlexTensor, grad: FlexTensor) {
    let what = format!("{what} {:?}", shape(&x));
    let (y, mean, rstd) = once(&LAYER_NORM_FORWARD, &what, || {
        CpuFlex::fused_layer_norm_with_stats(x.clone(), gamma.clone(), beta.clone(), EPS)
    });
    let (y_ref, mean_ref, rstd_ref) =
        Flex::fused_layer_norm_with_stats(x.clone(), gamma.clone(), beta.clone(), EPS);
    let forward = |name: &str, got, expected| {
        assert_close(
            &format!("{what}: {name}"),
            got,
            expected,
            OpKind::Reduction,
            Pass::Forward,
        )
    };
    forward("y", y, y_ref);
    forward("mean", mean, mean_ref.clone());
    forward("rstd", rstd, rstd_ref.clone());

    let (dx, dgamma, dbeta) = once(&LAYER_NORM_BACKWARD, &what, || {
        CpuFlex::fused_layer_norm_backward(
            x.clone(),
            gamma.clone(),
            grad.clone(),
            mean_ref.clone(),
            rstd_ref.clone(),
        )
    });
    let (dx_ref, dgamma_ref, dbeta_ref) =
        Flex::fused_layer_norm_backward(x, gamma, grad, mean_ref, rstd_ref);
    let backward = |name: &str, got, expected| {
        assert_close(
            &format!("{what}: {name}"),
            got,
            expected,
            OpKind::Reduction,
            Pass::Backward,
        )
    };
    backward("dx", dx, dx_ref);
    backward("dgamma", dgamma, dgamma_ref);
    backward("dbeta", dbeta, dbeta_ref);
}

fn check_contiguous(dims: &[usize], seed: u64) {
    let [x, gamma, beta, grad] = inputs(dims, seed);
    check("contiguous", x, gamma, beta, grad);
}

#[test]
fn matches_flex_on_odd_widths_and_rows() {
    check_contiguous(&[5, 1], 1); // width 1: x − mean = 0, y = beta, dx = 0
    check_contiguous(&[1, 1], 2); // one element
    check_contiguous(&[3, 13, 7], 3);
    check_contiguous(&[37, 33], 4);
    check_contiguous(&[3, 768], 5);
    check_contiguous(&[2, 3, 5, 17], 6); // rank 4
}

#[test]
fn matches_flex_across_parallel_tasks() {
    // Tasks of 2^14 elements: 21 rows of 768 (7 tasks, the last short), 496 rows of 33
    // (9 tasks), 2340 rows of 7 (8 tasks); row counts not multiples of 8.
    check_contiguous(&[3, 47, 768], 11); // 108 288 elements
    check_contiguous(&[4099, 33], 12); // 135 267
    check_contiguous(&[16411, 7], 13); // 114 877
}

#[test]
fn matches_flex_on_strided_and_offset_views() {
    // x and grad transposed ([45, 33] views of [33, 45] buffers).
    let x = transposed(normal(&[33, 45], 21, 1.5));
    let grad = transposed(normal(&[33, 45], 22, 1.0));
    let [_, gamma, beta, _] = inputs(&[33], 23);
    check("transposed", x, gamma, beta, grad);

    // Rows at a stride of 40 (columns 3..36), gamma and beta at an offset into their buffers.
    let x = columns(normal(&[29, 40], 24, 1.5), 3, 33);
    let grad = columns(normal(&[29, 40], 25, 1.0), 5, 33);
    let gamma = offset_view(uniform(&[36], 26, 0.5, 1.5), 3);
    let beta = offset_view(uniform(&[40], 27, -0.5, 0.5), 7);
    check("strided rows, offset gamma/beta", x, gamma, beta, grad);

    // A transposed input large enough for several tasks: [1001, 101] from [101, 1001].
    let x = transposed(normal(&[101, 1001], 28, 1.5));
    let grad = transposed(normal(&[101, 1001], 29, 1.0));
    let [_, gamma, beta, _] = inputs(&[101], 30);
    check("transposed, several tasks", x, gamma, beta, grad);
}

#[test]
fn f64_and_bf16_take_flexs_path() {
    for dtype in [FloatDType::F64, FloatDType::BF16] {
        let what = format!("{dtype:?}");
        let [x, gamma, beta, grad] = inputs(&[13, 33], 41).map(|t| cast(t, dtype));
        let (y, mean, rstd) = counted(&LAYER_NORM_FORWARD, 0, &what, || {
            CpuFlex::fused_layer_norm_with_stats(x.clone(), gamma.clone(), beta.clone(), EPS)
        });
        let (y_ref, mean_ref, rstd_ref) =
            Flex::fused_layer_norm_with_stats(x.clone(), gamma.clone(), beta.clone(), EPS);
        assert_identical(&format!("{what}: y"), y, y_ref);
        assert_identical(&format!("{what}: mean"), mean, mean_ref.clone());
        assert_identical(&format!("{what}: rstd"), rstd, rstd_ref.clone());

        let (dx, dgamma, dbeta) = counted(&LAYER_NORM_BACKWARD, 0, &what, || {
            CpuFlex::fused_layer_norm_backward(
                x.clone(),
                gamma.clone(),
                grad.clone(),
                mean_ref.clone(),
                rstd_ref.clone(),
            )
        });
        let (dx_ref, dgamma_ref, dbeta_ref) =
            Flex::fused_layer_norm_backward(x, gamma, grad, mean_ref, rstd_ref);
        assert_identical(&format!("{what}: dx"), dx, dx_ref);
        assert_identical(&format!("{what}: dgamma"), dgamma, dgamma_ref);
        assert_identical(&format!("{what}: dbeta"), dbeta, dbeta_ref);
    }
}
