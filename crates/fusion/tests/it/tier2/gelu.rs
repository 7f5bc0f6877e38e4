//! burnacc's GELU kernels on `CpuFlex` (bias + exact GELU, QuickGELU; one pass each way)
//! against Flex's (the plain-Burn reference of `GeluKernel`'s default methods), forward and
//! backward, with and without a bias, on odd widths and row counts, inputs spread over several
//! parallel tasks, strided and offset views; f64 and bf16 take Flex's path. The counters say
//! which ran.
//!
//! Each output element is a short formula (burnacc's rational `erf` and libm's `exp` against
//! Flex's libm `erf`/`exp`): the element-wise tolerances; the `erf` itself is held to libm's
//! within a few ulp. The bias gradient sums `dx` over the rows in another order (per-task
//! partials): the f32 reduction tolerance of the backward.

use super::kernel_support::{
    assert_close, assert_identical, cast, columns, counted, normal, offset_view, once, shape,
    transposed,
};
use burn::backend::Flex;
use burn::backend::flex::FlexTensor;
use burn::tensor::FloatDType;
use burnacc_fusion::CpuFlex;
use burnacc_fusion::counters::{GELU_BACKWARD, GELU_FORWARD};
use burnacc_kernels::gelu::GeluKernel;
use burnacc_tests::tolerance::{OpKind, Pass};

/// `x` (standard deviation 3, so the tails where `Φ` saturates are covered) and `grad`.
fn inputs(dims: &[usize], seed: u64) -> (FlexTensor, FlexTensor) {
    (normal(dims, seed, 3.0), normal(dims, seed + 1, 1.0))
}

fn bias(width: usize, seed: u64) -> FlexTensor {
    normal(&[width], seed, 1.0)
}

/// Bias + GELU forward and backward of `CpuFlex` against Flex's on the same inputs.
fn check_bias_gelu(what: &str, x: FlexTensor, bias: Option<FlexTensor>, grad: FlexTensor) {
    let what = format!(
        "bias_gelu {what} {:?}, bias {:?}",
        shape(&x),
        bias.as_ref().map(shape)
    );
    let y = once(&GELU_FORWARD, &what, || {
        CpuFlex::fused_bias_gelu(x.clone(), bias.clone())
    });
    let y_ref = Flex::fused_bias_gelu(x.clone(), bias.clone());
    assert_close(
        &format!("{what}: y"),
        y,
        y_ref,
        OpKind::Elementwise,
        Pass::Forward,
    );

    let (dx, dbias) = once(&GELU_BACKWARD, &what, || {
        CpuFlex::fused_bias_gelu_backward(x.clone(), bias.clone(), grad.clone())
    });
    let (dx_ref, dbias_ref) = Flex::fused_bias_gelu_backward(x, bias.clone(), grad);
    assert_close(
        &format!("{what}: dx"),
        dx,
        dx_ref,
        OpKind::Elementwise,
        Pass::Backward,
    );
    assert_eq!(dbias.is_some(), bias.is_some(), "{what}: dbias iff bias");
    assert_eq!(dbias_ref.is_some(), bias.is_some(), "{what}: Flex's dbias");
    if let (Some(dbias), Some(dbias_ref)) = (dbias, dbias_ref) {
        assert_close(
            &format!("{what}: dbias"),
            dbias,
            dbias_ref,
            OpKind::Reduction,
            Pass::Backward,
        );
    }
}

/// QuickGELU forward and backward of `CpuFlex` against Flex's on the same inputs.
fn check_quick_gelu(what: &str, x: FlexTensor, grad: FlexTensor) {
    let what = format!("quick_gelu {what} {:?}", shape(&x));
    let y = once(&GELU_FORWARD, &what, || {
        CpuFlex::fused_quick_gelu(x.clone())
    });
    assert_close(
        &format!("{what}: y"),
        y,
        Flex::fused_quick_gelu(x.clone()),
        OpKind::Elementwise,
        Pass::Forward,
    );
    let dx = once(&GELU_BACKWARD, &what, || {
        CpuFlex::fused_quick_gelu_backward(x.clone(), grad.clone())
    });
    assert_close(
        &format!("{what}: dx"),
        dx,
        Flex::fused_quick_gelu_backward(x, grad),
        OpKind::Elementwise,
        Pass::Backward,
    );
}

/// Contiguous inputs of `dims`: bias + GELU with and without a bias, and QuickGELU.
fn check_all(dims: &[usize], seed: u64) {
    let (x, grad) = inputs(dims, seed);
    let width = dims[dims.len() - 1];
    check_bias_gelu("", x.clone(), Some(bias(width, seed + 2)), grad.clone());
    check_bias_gelu("", x.clone(), None, grad.clone());
    check_quick_gelu("", x, grad);
}

/// The kernel's `erf` on a grid of 2·10⁶ points over `[−8, 8]` (every f32 exponent of `erf`'s
/// transition, and the saturated tails) against libm's `erff`: within 1.5e-7 absolute (2 ulp
/// of values near 1) and, where `|erf| ≥ 1e-3`, 2.5e-7 relative (2 ulp of f32 at its coarsest
/// relative spacing), of which libm's own error is up to 1 ulp.
#[test]
fn erf_is_within_a_few_ulp_of_libm() {
    let (mut worst_abs, mut worst_rel) = (0f64, 0f64);
    for i in 0..=2_000_000 {
        let x = -8.0 + 16.0 * i as f32 / 2_000_000.0;
        let (got, want) = (burnacc_fusion::kernels::gelu::erf(x), libm::erff(x));
        let abs = (got as f64 - want as f64).abs();
        worst_abs = worst_abs.max(abs);
        if want.abs() >= 1e-3 {
            worst_rel = worst_rel.max(abs / want.abs() as f64);
        }
    }
    assert!(
        worst_abs <= 1.5e-7 && worst_rel <= 2.5e-7,
        "erf: worst absolute error {worst_abs:e}, relative {worst_rel:e}"
    );
    // Odd, and exact at 0 and in the tails.
    assert_eq!(burnacc_fusion::kernels::gelu::erf(0.0), 0.0);
    assert_eq!(burnacc_fusion::kernels::gelu::erf(-9.0), -1.0);
}

#[test]
fn matches_flex_on_odd_widths_and_rows() {
    check_all(&[5, 1], 1); // width 1: the bias is one scalar
    check_all(&[1], 2);
    check_all(&[13, 7], 3);
    check_all(&[3, 37, 33], 4);
    check_all(&[9, 768], 5);
    check_all(&[2, 3, 5, 17], 6);
}

#[test]
fn matches_flex_across_parallel_tasks() {
    // Tasks of 2^14 elements: 21 rows of 768 (7 tasks), 496 rows of 33 (9 tasks); without a
    // bias, chunks of 2^14 elements whatever the shape.
    check_all(&[3, 47, 768], 11); // 108 288 elements
    check_all(&[4099, 33], 12); // 135 267
    check_all(&[100_003], 13); // one row: the bias is the whole row
}

#[test]
fn matches_flex_on_strided_and_offset_views() {
    // x and grad transposed ([45, 33] views of [33, 45] buffers), the bias at an offset.
    let x = transposed(normal(&[33, 45], 21, 3.0));
    let grad = transposed(normal(&[33, 45], 22, 1.0));
    let b = offset_view(normal(&[38], 23, 1.0), 5);
    check_bias_gelu("transposed", x.clone(), Some(b), grad.clone());
    check_bias_gelu("transposed", x.clone(), None, grad.clone());
    check_quick_gelu("transposed", x, grad);

    // Rows at a stride of 40 (columns 3..36).
    let x = columns(normal(&[29, 40], 24, 3.0), 3, 33);
    let grad = columns(normal(&[29, 40], 25, 1.0), 6, 33);
    check_bias_gelu("strided rows", x.clone(), Some(bias(33, 26)), grad.clone());
    check_quick_gelu("strided rows", x, grad);

    // Transposed and large enough for several tasks: [1001, 101] from [101, 1001].
    let x = transposed(normal(&[101, 1001], 27, 3.0));
    let grad = transposed(normal(&[101, 1001], 28, 1.0));
    check_bias_gelu(
        "transposed, several tasks",
        x.clone(),
        Some(bias(101, 29)),
        grad.clone(),
    );
    check_bias_gelu("transposed, several tasks", x.clone(), None, grad.clone());
    check_quick_gelu("transposed, several tasks", x, grad);
}

#[test]
fn f64_and_bf16_take_flexs_path() {
    for dtype in [FloatDType::F64, FloatDType::BF16] {
        let what = format!("{dtype:?}");
        let (x, grad) = inputs(&[13, 33], 41);
        let (x, grad, b) = (cast(x, dtype), cast(grad, dtype), cast(bias(33, 43), dtype));
        for bias in [Some(b), None] {
            let what = format!("{what}, bias {}", bias.is_some());
            let y = counted(&GELU_FORWARD, 0, &what, || {
                CpuFlex::fused_bias_gelu(x.clone(), bias.clone())
            });
            let y_ref = Flex::fused_bias_gelu(x.clone(), bias.clone());
            assert_identical(&format!("{what}: bias_gelu"), y, y_ref);
            let (dx, dbias) = counted(&GELU_BACKWARD, 0, &what, || {
                CpuFlex::fused_bias_gelu_backward(x.clone(), bias.clone(), grad.clone())
            });
            let (dx_ref, dbias_ref) =
                Flex::fused_bias_gelu_backward(x.clone(), bias.clone(), grad.clone());
            assert_identical(&format!("{what}: bias_gelu dx"), dx, dx_ref);
            assert_eq!(dbias.is_some(), dbias_ref.is_some());
            if let (Some(dbias), Some(dbias_ref)) = (dbias, dbias_ref) {
                assert_identical(&format!("{what}: bias_gelu dbias"), dbias, dbias_ref);
            }
        }
        let y = counted(&GELU_FORWARD, 0, &what, || {
            CpuFlex::fused_quick_gelu(x.clone())
        });
        assert_identical(
            &format!("{what}: quick_gelu"),
            y,
            Flex::fused_quick_gelu(x.clone()),
        );
        let dx = counted(&GELU_BACKWARD, 0, &what, || {
            CpuFlex::fused_quick_gelu_backward(x.clone(), grad.clone())
        });
        assert_identical(
            &format!("{what}: quick_gelu dx"),
            dx,
            Flex::fused_quick_gelu_backward(x, grad),
        );
    }
}

#[test]
fn burn_s_gelu_op_runs_the_kernel_in_f32_and_flex_s_loop_otherwise() {
    use burn::tensor::ops::ActivationOps;
    let (x, grad) = inputs(&[37, 130], 40);
    let y = once(&GELU_FORWARD, "gelu", || CpuFlex::gelu(x.clone()));
    let expected = Flex::gelu(x.clone());
    assert_close("gelu", y, expected, OpKind::Elementwise, Pass::Forward);
    let dx = once(&GELU_BACKWARD, "gelu_backward", || {
        CpuFlex::gelu_backward(x.clone(), grad.clone())
    });
    let expected = Flex::gelu_backward(x.clone(), grad.clone());
    assert_close(
        "gelu_backward",
        dx,
        expected,
        OpKind::Elementwise,
        Pass::Backward,
    );
    let (x, grad) = (cast(x, FloatDType::F64), cast(grad, FloatDType::F64));
    let y = counted(&GELU_FORWARD, 0, "gelu f64", || CpuFlex::gelu(x.clone()));
    assert_identical("gelu f64", y, Flex::gelu(x.clone()));
    let dx = counted(&GELU_BACKWARD, 0, "gelu_backward f64", || {
        CpuFlex::gelu_backward(x.clone(), grad.clone())
    });
    assert_identical("gelu_backward f64", dx, Flex::gelu_backward(x, grad));
}
