//! burnacc's bias + dropout + residual-add kernels on `CpuFlex` (one pass each way, the mask
//! hashed from the seed and each element's index) against Flex's (the plain-Burn reference of
//! `BiasDropoutAddKernel`'s default methods with the host mask), forward and backward, with and
//! without a bias, at `p = 0` and `p = 0.1`, on odd widths and row counts, inputs spread over
//! several parallel tasks, strided and offset views; f64 and bf16 take Flex's path. The
//! counters say which ran.
//!
//! The mask must be the reference's exactly: the same elements dropped, which the tests check
//! on the forward with a zero residual (`y = 0` exactly where dropped) and on `dx`. Values are
//! one short formula per element (element-wise tolerances); the bias gradient sums `dx` over
//! the rows in another order (per-task partials): the f32 reduction tolerance of the backward.

use super::kernel_support::{
    assert_close, assert_identical, cast, columns, counted, device, from_values, normal,
    offset_view, once, shape, transposed, values,
};
use burn::backend::Flex;
use burn::backend::flex::FlexTensor;
use burn::tensor::FloatDType;
use burnacc_fusion::CpuFlex;
use burnacc_fusion::counters::{BIAS_DROPOUT_ADD_BACKWARD, BIAS_DROPOUT_ADD_FORWARD};
use burnacc_kernels::bias_dropout_add::{BiasDropoutAddKernel, DropoutSeed};
use burnacc_tests::tolerance::{OpKind, Pass};

/// The seed tensor of a host seed, as the kernels take it (an Int `[2]` Flex tensor, which
/// `CpuFlex` shares).
fn seed_tensor(seed: u64) -> FlexTensor {
    DropoutSeed::from_u64(seed)
        .to_tensor::<Flex>(&device())
        .into_primitive()
}

/// Indices of the elements that are exactly zero.
fn zeros(t: FlexTensor) -> Vec<usize> {
    values(t)
        .into_iter()
        .enumerate()
        .filter_map(|(i, v)| (v == 0.0).then_some(i))
        .collect()
}

/// `CpuFlex`'s `got` against Flex's `expected`: the same elements exactly zero (the same
/// elements dropped), and the values within `kind`'s element-wise tolerance. Returns the
/// number of zeros.
fn assert_same_drops(what: &str, got: FlexTensor, expected: FlexTensor, pass: Pass) -> usize {
    let (got_zeros, expected_zeros) = (zeros(got.clone()), zeros(expected.clone()));
    if got_zeros != expected_zeros {
        let only_got: Vec<_> = got_zeros
            .iter()
            .filter(|&&i| expected_zeros.binary_search(&i).is_err())
            .take(10)
            .collect();
        let only_expected: Vec<_> = expected_zeros
            .iter()
            .filter(|&&i| got_zeros.binary_search(&i).is_err())
            .take(10)
            .collect();
        panic!(
            "{what}: dropped elements differ: {} zeros vs Flex's {}; zero only here at {only_got:?}, \
             only in Flex's at {only_expected:?}",
            got_zeros.len(),
            expected_zeros.len()
        );
    }
    assert_close(what, got, expected, OpKind::Elementwise, pass);
    got_zeros.len()
}

/// Forward (with `residual`, and with a zero residual to see the mask), backward and bias
/// gradient of `CpuFlex` against Flex's, at `p` with the mask of host seed `seed` (no seed
/// tensor at `p = 0`).
fn check(
    what: &str,
    x: FlexTensor,
    bias: Option<FlexTensor>,
    residual: FlexTensor,
    grad: FlexTensor,
    p: f64,
    seed: u64,
) {
    let dims = shape(&x);
    let numel: usize = dims.iter().product();
    let what = format!(
        "{what} {dims:?}, bias {}, p {p}, seed {seed}",
        bias.is_some()
    );
    let seed = (p > 0.0).then(|| seed_tensor(seed));

    let y = once(&BIAS_DROPOUT_ADD_FORWARD, &what, || {
        CpuFlex::fused_bias_dropout_add(x.clone(), bias.clone(), residual.clone(), p, seed.clone())
    });
    let y_ref =
        Flex::fused_bias_dropout_add(x.clone(), bias.clone(), residual.clone(), p, seed.clone());
    assert_close(
        &format!("{what}: y"),
        y,
        y_ref,
        OpKind::Elementwise,
        Pass::Forward,
    );

    // With a zero residual, y is 0 exactly where an element is dropped.
    let zero = from_values(vec![0.0; numel], &dims);
    let y0 = once(&BIAS_DROPOUT_ADD_FORWARD, &what, || {
        CpuFlex::fused_bias_dropout_add(x.clone(), bias.clone(), zero.clone(), p, seed.clone())
    });
    let y0_ref = Flex::fused_bias_dropout_add(x, bias.clone(), zero, p, seed.clone());
    let dropped_forward = assert_same_drops(
        &format!("{what}: y with a zero residual"),
        y0,
        y0_ref,
        Pass::Forward,
    );

    let with_bias = bias.is_some();
    let (dx, dbias) = once(&BIAS_DROPOUT_ADD_BACKWARD, &what, || {
        CpuFlex::fused_bias_dropout_add_backward(grad.clone(), p, seed.clone(), with_bias)
    });
    let (dx_ref, dbias_ref) =
        Flex::fused_bias_dropout_add_backward(grad, p, seed.clone(), with_bias);
    let dropped = assert_same_drops(&format!("{what}: dx"), dx, dx_ref, Pass::Backward);
    assert_eq!(
        dropped, dropped_forward,
        "{what}: the backward drops what the forward dropped"
    );
    if p == 0.0 {
        assert_eq!(dropped, 0, "{what}: nothing is dropped at p = 0");
    } else if numel >= 10_000 {
        // 10σ of the binomial count at the sizes used here.
        let fraction = dropped as f64 / numel as f64;
        assert!(
            (fraction - p).abs() < 10.0 * (p * (1.0 - p) / numel as f64).sqrt(),
            "{what}: dropped {fraction} of the elements at p = {p}"
        );
    } else if numel >= 100 {
        assert!(dropped > 0, "{what}: nothing dropped at p = {p}");
    }

    assert_eq!(dbias.is_some(), with_bias, "{what}: dbias iff with_bias");
    assert_eq!(dbias_ref.is_some(), with_bias, "{what}: Flex's dbias");
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

/// Contiguous inputs of `dims`, with and without a bias, at `p = 0` and `p = 0.1`.
fn check_all(dims: &[usize], seed: u64) {
    let width = dims[dims.len() - 1];
    let x = normal(dims, seed, 1.0);
    let residual = normal(dims, seed + 1, 1.0);
    let grad = normal(dims, seed + 2, 1.0);
    let bias = normal(&[width], seed + 3, 1.0);
    for p in [0.0, 0.1] {
        for bias in [Some(bias.clone()), None] {
            check(
                "contiguous",
                x.clone(),
                bias,
                residual.clone(),
                grad.clone(),
                p,
                seed + 100,
            );
        }
    }
}

#[test]
fn matches_flex_on_odd_widths_and_rows() {
    check_all(&[5, 1], 1); // width 1
    check_all(&[13, 7], 2);
    check_all(&[3, 37, 33], 3);
    check_all(&[9, 768], 4);
    check_all(&[2, 3, 5, 17], 5);
}

#[test]
fn matches_flex_across_parallel_tasks() {
    // Tasks of 2^14 elements: 21 rows of 768 (7 tasks), 496 rows of 33 (9 tasks), 2340 rows
    // of 7 (8 tasks); each task's element indices must continue the previous task's.
    check_all(&[3, 47, 768], 11); // 108 288 elements
    check_all(&[4099, 33], 12); // 135 267
    check_all(&[16411, 7], 13); // 114 877
}

#[test]
fn different_seeds_drop_different_elements() {
    let dims = [61, 33];
    let x = normal(&dims, 31, 1.0);
    let zero = from_values(vec![0.0; 61 * 33], &dims);
    let drops = |seed: u64| {
        let y = once(&BIAS_DROPOUT_ADD_FORWARD, "seed", || {
            CpuFlex::fused_bias_dropout_add(
                x.clone(),
                None,
                zero.clone(),
                0.1,
                Some(seed_tensor(seed)),
            )
        });
        zeros(y)
    };
    assert_ne!(drops(1), drops(2), "two seeds gave the same mask");
}

#[test]
fn matches_flex_on_strided_and_offset_views() {
    // x, residual and grad transposed ([45, 33] views of [33, 45] buffers), the bias at an
    // offset: the mask follows the logical row-major index, not the memory order.
    let x = transposed(normal(&[33, 45], 21, 1.0));
    let residual = transposed(normal(&[33, 45], 22, 1.0));
    let grad = transposed(normal(&[33, 45], 23, 1.0));
    let bias = offset_view(normal(&[38], 24, 1.0), 5);
    for p in [0.0, 0.1] {
        for bias in [Some(bias.clone()), None] {
            let (x, residual, grad) = (x.clone(), residual.clone(), grad.clone());
            check("transposed", x, bias, residual, grad, p, 25);
        }
    }

    // Rows at a stride of 40; the residual contiguous.
    let x = columns(normal(&[29, 40], 26, 1.0), 3, 33);
    let residual = normal(&[29, 33], 27, 1.0);
    let grad = columns(normal(&[29, 40], 28, 1.0), 7, 33);
    let bias = normal(&[33], 29, 1.0);
    check("strided rows", x, Some(bias), residual, grad, 0.1, 30);

    // Transposed and large enough for several tasks: [1001, 101] from [101, 1001].
    let x = transposed(normal(&[101, 1001], 31, 1.0));
    let residual = transposed(normal(&[101, 1001], 32, 1.0));
    let grad = transposed(normal(&[101, 1001], 33, 1.0));
    let bias = normal(&[101], 34, 1.0);
    check(
        "transposed, several tasks",
        x,
        Some(bias),
        residual,
        grad,
        0.1,
        35,
    );
}

#[test]
fn f64_and_bf16_take_flexs_path() {
    for dtype in [FloatDType::F64, FloatDType::BF16] {
        let dims = [13, 33];
        let [x, residual, grad] = [41, 42, 43].map(|s| cast(normal(&dims, s, 1.0), dtype));
        let bias = cast(normal(&[33], 44, 1.0), dtype);
        for p in [0.0, 0.1] {
            let seed = (p > 0.0).then(|| seed_tensor(45));
            let what = format!("{dtype:?}, p {p}");
            let y = counted(&BIAS_DROPOUT_ADD_FORWARD, 0, &what, || {
                CpuFlex::fused_bias_dropout_add(
                    x.clone(),
                    Some(bias.clone()),
                    residual.clone(),
                    p,
                    seed.clone(),
                )
            });
            let y_ref = Flex::fused_bias_dropout_add(
                x.clone(),
                Some(bias.clone()),
                residual.clone(),
                p,
                seed.clone(),
            );
            assert_identical(&format!("{what}: y"), y, y_ref);
            let (dx, dbias) = counted(&BIAS_DROPOUT_ADD_BACKWARD, 0, &what, || {
                CpuFlex::fused_bias_dropout_add_backward(grad.clone(), p, seed.clone(), true)
            });
            let (dx_ref, dbias_ref) =
                Flex::fused_bias_dropout_add_backward(grad.clone(), p, seed, true);
            assert_identical(&format!("{what}: dx"), dx, dx_ref);
            assert_identical(
                &format!("{what}: dbias"),
                dbias.expect("with_bias"),
                dbias_ref.expect("with_bias"),
            );
        }
    }
}
