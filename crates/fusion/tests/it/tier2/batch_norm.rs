//! burnacc's batch-norm kernels on `CpuFlex` (two passes each way) against the plain-Burn
//! reference of `BatchNormKernel`'s default methods run on Flex in f64, forward with its
//! statistics and backward, with and without the fused ReLU: odd sizes, ranks 2 to 4, channels
//! spread over several parallel tasks, activations far from zero, strided and offset views, an
//! empty batch; f64 and bf16 take Flex's path. The counters say which ran.
//!
//! The per-channel sums run in another order (interleaved partial sums per row), so the bounds
//! are the f32 reduction tolerances.

use super::kernel_support::{
    assert_close, assert_identical, cast, columns, counted, normal, offset_view, once, shape,
    transposed, uniform, values,
};
use burn::backend::Flex;
use burn::backend::flex::FlexTensor;
use burn::tensor::FloatDType;
use burn::tensor::ops::FloatTensorOps;
use burnacc_fusion::CpuFlex;
use burnacc_fusion::counters::{BATCH_NORM_BACKWARD, BATCH_NORM_FORWARD};
use burnacc_kernels::batch_norm::BatchNormKernel;
use burnacc_tests::tolerance::{OpKind, Pass};

const EPS: f64 = 1e-5;

/// `x` and `grad` of `dims` (contiguous; `x` centred at `centre`), `gamma`, `beta` of its
/// channel count.
fn inputs(dims: &[usize], seed: u64, centre: f32) -> [FlexTensor; 4] {
    let channels = [dims[1]];
    let x = Flex::float_add_scalar(normal(dims, seed, 1.5), centre.into());
    [
        x,
        uniform(&channels, seed + 1, 0.5, 1.5),
        uniform(&channels, seed + 2, -0.5, 0.5),
        normal(dims, seed + 3, 1.0),
    ]
}

fn f64s(t: &FlexTensor) -> FlexTensor {
    cast(t.clone(), FloatDType::F64)
}

fn f32s(t: FlexTensor) -> FlexTensor {
    cast(t, FloatDType::F32)
}

/// Forward `(y, mean, rstd)` and backward `(dx, dgamma, dbeta)` of `CpuFlex` against the
/// reference in f64 on the same inputs, with and without the ReLU; both backwards get the
/// statistics (and, with the ReLU, the output) of their own forward.
fn check(what: &str, x: FlexTensor, gamma: FlexTensor, beta: FlexTensor, grad: FlexTensor) {
    for relu in [false, true] {
        let what = format!("{what} {:?} relu {relu}", shape(&x));
        let (y, mean, rstd) = once(&BATCH_NORM_FORWARD, &what, || {
            CpuFlex::fused_batch_norm_with_stats(x.clone(), gamma.clone(), beta.clone(), EPS, relu)
        });
        let (y_ref, mean_ref, rstd_ref) =
            Flex::fused_batch_norm_with_stats(f64s(&x), f64s(&gamma), f64s(&beta), EPS, relu);
        let forward = |name: &str, got, expected: &FlexTensor| {
            assert_close(
                &format!("{what}: {name}"),
                got,
                f32s(expected.clone()),
                OpKind::Reduction,
                Pass::Forward,
            )
        };
        forward("y", y.clone(), &y_ref);
        forward("mean", mean.clone(), &mean_ref);
        forward("rstd", rstd.clone(), &rstd_ref);

        let (dx, dgamma, dbeta) = once(&BATCH_NORM_BACKWARD, &what, || {
            CpuFlex::fused_batch_norm_backward(
                x.clone(),
                gamma.clone(),
                grad.clone(),
                mean,
                rstd,
                relu.then_some(y),
            )
        });
        let (dx_ref, dgamma_ref, dbeta_ref) = Flex::fused_batch_norm_backward(
            f64s(&x),
            f64s(&gamma),
            f64s(&grad),
            mean_ref,
            rstd_ref,
            relu.then_some(y_ref),
        );
        let backward = |name: &str, got, expected| {
            assert_close(
                &format!("{what}: {name}"),
                got,
                f32s(expected),
                OpKind::Reduction,
                Pass::Backward,
            )
        };
        backward("dx", dx, dx_ref);
        backward("dgamma", dgamma, dgamma_ref);
        backward("dbeta", dbeta, dbeta_ref);
    }
}

fn check_contiguous(dims: &[usize], seed: u64) {
    let [x, gamma, beta, grad] = inputs(dims, seed, 0.0);
    check("contiguous", x, gamma, beta, grad);
}

#[test]
fn matches_the_reference_on_odd_sizes_and_ranks() {
    check_contiguous(&[5, 3], 1); // rank 2: one element per row
    check_contiguous(&[1, 4, 7], 2); // a batch of one
    check_contiguous(&[3, 5, 7, 9], 3);
    check_contiguous(&[2, 1, 3, 3], 4); // one channel
    check_contiguous(&[8, 67, 1, 1], 5); // 1 × 1 maps (ResNet's last stage)
    check_contiguous(&[2, 3, 1], 6); // two elements per channel
}

#[test]
fn matches_the_reference_across_parallel_tasks() {
    // 16 384-element tasks: one channel of 20 000 elements each (5 channels); 9 channels of
    // 1 800 per task (67 channels, the last task short).
    check_contiguous(&[5, 5, 40, 100], 11);
    check_contiguous(&[8, 67, 15, 15], 12);
}

#[test]
fn keeps_the_variance_of_activations_far_from_zero() {
    // Mean 100, standard deviation 1.5: a variance from E[x²] − E[x]² in f32 would lose
    // about four digits; the deviations keep it to f32 rounding.
    let [x, gamma, beta, grad] = inputs(&[4, 6, 9, 11], 21, 100.0);
    check("centred at 100", x, gamma, beta, grad);
}

#[test]
fn matches_the_reference_on_strided_and_offset_views() {
    // x and grad with their last two axes swapped ([3, 5, 11, 7] views of [3, 5, 7, 11]).
    let x = transposed(normal(&[3, 5, 7, 11], 31, 1.5));
    let grad = transposed(normal(&[3, 5, 7, 11], 32, 1.0));
    let [_, gamma, beta, _] = inputs(&[3, 5], 33, 0.0);
    check("transposed", x, gamma, beta, grad);

    // Rows at a stride of 40 (columns 3..36), gamma and beta at an offset into their buffers.
    let x = columns(normal(&[6, 9, 40], 34, 1.5), 3, 33);
    let grad = columns(normal(&[6, 9, 40], 35, 1.0), 5, 33);
    let gamma = offset_view(uniform(&[12], 36, 0.5, 1.5), 3);
    let beta = offset_view(uniform(&[16], 37, -0.5, 0.5), 7);
    check("strided rows, offset gamma/beta", x, gamma, beta, grad);
}

#[test]
fn an_empty_batch_gives_empty_outputs_and_zero_parameter_gradients() {
    let [x, gamma, beta, grad] = inputs(&[0, 3, 4], 41, 0.0);
    let (y, mean, rstd) = once(&BATCH_NORM_FORWARD, "empty", || {
        CpuFlex::fused_batch_norm_with_stats(x.clone(), gamma.clone(), beta, EPS, true)
    });
    assert_eq!(shape(&y), [0, 3, 4]);
    // 0 / 0, as the reference formula gives.
    assert!(values(mean.clone()).iter().all(|m| m.is_nan()), "mean");
    let (dx, dgamma, dbeta) = once(&BATCH_NORM_BACKWARD, "empty", || {
        CpuFlex::fused_batch_norm_backward(x, gamma, grad, mean, rstd, Some(y))
    });
    assert_eq!(shape(&dx), [0, 3, 4]);
    assert_eq!(values(dgamma), [0.0; 3], "dgamma");
    assert_eq!(values(dbeta), [0.0; 3], "dbeta");
}

#[test]
fn f64_and_bf16_take_flexs_path() {
    for dtype in [FloatDType::F64, FloatDType::BF16] {
        let what = format!("{dtype:?}");
        let [x, gamma, beta, grad] = inputs(&[4, 3, 5], 51, 0.0).map(|t| cast(t, dtype));
        let (y, mean, rstd) = counted(&BATCH_NORM_FORWARD, 0, &what, || {
            CpuFlex::fused_batch_norm_with_stats(x.clone(), gamma.clone(), beta.clone(), EPS, true)
        });
        let (y_ref, mean_ref, rstd_ref) =
            Flex::fused_batch_norm_with_stats(x.clone(), gamma.clone(), beta, EPS, true);
        assert_identical(&format!("{what}: y"), y, y_ref.clone());
        assert_identical(&format!("{what}: mean"), mean, mean_ref.clone());
        assert_identical(&format!("{what}: rstd"), rstd, rstd_ref.clone());

        let (dx, dgamma, dbeta) = counted(&BATCH_NORM_BACKWARD, 0, &what, || {
            CpuFlex::fused_batch_norm_backward(
                x.clone(),
                gamma.clone(),
                grad.clone(),
                mean_ref.clone(),
                rstd_ref.clone(),
                Some(y_ref.clone()),
            )
        });
        let (dx_ref, dgamma_ref, dbeta_ref) =
            Flex::fused_batch_norm_backward(x, gamma, grad, mean_ref, rstd_ref, Some(y_ref));
        assert_identical(&format!("{what}: dx"), dx, dx_ref);
        assert_identical(&format!("{what}: dgamma"), dgamma, dgamma_ref);
        assert_identical(&format!("{what}: dbeta"), dbeta, dbeta_ref);
    }
}
