//! `CpuFlex`'s `float_matmul` (a batch against one shared matrix as one product; f32 products
//! by burnacc's GEMM call into an output written once), `float_zeros` / `float_empty` and
//! `float_random` (Bernoulli masks from a counter-based hash) against Flex's, with the counters
//! that say which path ran.
//!
//! An f32 product that does not fold makes the same `gemm` calls as Flex (same operands, strides
//! and threading), so it is bit-identical; a folded one is one product instead of several, which
//! packs differently: the contraction tolerance.

use super::kernel_support::{
    assert_close, assert_identical, counted, device, normal, once, shape, transposed, values,
};
use burn::backend::Flex;
use burn::backend::flex::FlexTensor;
use burn::tensor::backend::Backend;
use burn::tensor::ops::FloatTensorOps;
use burn::tensor::{Distribution, FloatDType, Shape};
use burnacc_fusion::CpuFlex;
use burnacc_fusion::counters::{BERNOULLI_F32, MATMUL_F32, MATMUL_FOLDED_BATCH};
use burnacc_tests::tolerance::{OpKind, Pass};

fn matmul_matches_flex(what: &str, lhs: FlexTensor, rhs: FlexTensor, folded: bool) {
    let expected = Flex::float_matmul(lhs.clone(), rhs.clone());
    let calls = u64::from(folded);
    let got = counted(&MATMUL_FOLDED_BATCH, calls, what, || {
        once(&MATMUL_F32, what, || CpuFlex::float_matmul(lhs, rhs))
    });
    match folded {
        true => assert_close(what, got, expected, OpKind::Contraction, Pass::Forward),
        false => assert_identical(what, got, expected),
    }
}

#[test]
fn products_are_flex_s_on_broadcast_strided_and_offset_operands() {
    // Batch dimensions broadcast both ways: [2, 1, 5, 7] · [3, 7, 4] → [2, 3, 5, 4].
    matmul_matches_flex(
        "[2, 1, 5, 7] · [3, 7, 4]",
        normal(&[2, 1, 5, 7], 21, 1.0),
        normal(&[3, 7, 4], 22, 1.0),
        false,
    );
    // Both operands transposed views, and an operand at an offset in its buffer.
    matmul_matches_flex(
        "[6, 9, 11]ᵀ · [6, 13, 9]ᵀ",
        transposed(normal(&[6, 11, 9], 23, 1.0)),
        transposed(normal(&[6, 13, 11], 24, 1.0)),
        false,
    );
    let buffer = normal(&[40, 13], 25, 1.0);
    let offset = Flex::float_slice(buffer, &[burn::tensor::Slice::new(3, Some(20), 1)]);
    matmul_matches_flex(
        "[9, 17] · [17, 13] at row 3",
        normal(&[9, 17], 26, 1.0),
        offset,
        false,
    );
}

#[test]
fn large_products_and_large_batches_split_over_the_cores_as_flex_s() {
    // One product above Flex's threshold (192³): split inside `gemm`.
    matmul_matches_flex(
        "[211, 197] · [197, 203]",
        normal(&[211, 197], 31, 1.0),
        normal(&[197, 203], 32, 1.0),
        false,
    );
    // Many small products (Swin's windows): one product per parallel task.
    matmul_matches_flex(
        "[96, 49, 32] · [96, 32, 49]",
        normal(&[96, 49, 32], 33, 1.0),
        normal(&[96, 32, 49], 34, 1.0),
        false,
    );
    // Two products each above the threshold: one after the other, each split.
    matmul_matches_flex(
        "[2, 200, 200] · [2, 200, 200]",
        normal(&[2, 200, 200], 35, 1.0),
        normal(&[2, 200, 200], 36, 1.0),
        false,
    );
}

#[test]
fn empty_products_are_zeros_and_other_dtypes_are_flex_s() {
    for (what, l, r) in [
        ("k = 0", [3, 4, 0], [3, 0, 5]),
        ("m = 0", [3, 0, 4], [3, 4, 5]),
    ] {
        let (lhs, rhs) = (normal(&l, 41, 1.0), normal(&r, 42, 1.0));
        let expected = Flex::float_matmul(lhs.clone(), rhs.clone());
        let got = CpuFlex::float_matmul(lhs, rhs);
        assert_identical(what, got, expected);
    }
    // A batch of none (Flex's own product faults on it).
    let got = CpuFlex::float_matmul(normal(&[0, 4, 2], 41, 1.0), normal(&[1, 2, 5], 42, 1.0));
    assert_eq!(shape(&got), [0, 4, 5], "no batch: shape");
    let (lhs, rhs) = (normal(&[3, 5, 7], 43, 1.0), normal(&[3, 7, 2], 44, 1.0));
    let (lhs, rhs) = (
        Flex::float_cast(lhs, FloatDType::F64),
        Flex::float_cast(rhs, FloatDType::F64),
    );
    let expected = Flex::float_matmul(lhs.clone(), rhs.clone());
    let got = counted(&MATMUL_F32, 0, "f64", || CpuFlex::float_matmul(lhs, rhs));
    assert_identical("f64", got, expected);
}

#[test]
fn zeros_and_empty_are_zeros_of_the_dtype_asked() {
    for dtype in [
        FloatDType::F32,
        FloatDType::F64,
        FloatDType::F16,
        FloatDType::BF16,
    ] {
        let shape = Shape::new([3, 0, 2]);
        assert_identical(
            &format!("empty {dtype:?}"),
            CpuFlex::float_empty(shape.clone(), &device(), dtype),
            Flex::float_zeros(shape, &device(), dtype),
        );
        let shape = Shape::new([5, 7, 3]);
        for t in [
            CpuFlex::float_zeros(shape.clone(), &device(), dtype),
            CpuFlex::float_empty(shape.clone(), &device(), dtype),
        ] {
            assert_identical(
                &format!("zeros {dtype:?}"),
                t,
                Flex::float_zeros(shape.clone(), &device(), dtype),
            );
        }
    }
}

#[test]
fn a_batch_against_one_matrix_is_one_product() {
    // nn::Linear's shapes: [batch, seq, in] · [1, in, out], and a rank-2 right operand.
    matmul_matches_flex(
        "[3, 37, 65] · [1, 65, 19]",
        normal(&[3, 37, 65], 1, 1.0),
        normal(&[1, 65, 19], 2, 1.0),
        true,
    );
    matmul_matches_flex(
        "[2, 3, 5, 7] · [7, 4]",
        normal(&[2, 3, 5, 7], 3, 1.0),
        normal(&[7, 4], 4, 1.0),
        true,
    );
    // A transposed shared matrix (the backward's `grad · Wᵀ`) folds too.
    matmul_matches_flex(
        "[4, 33, 17] · [1, 29, 17]ᵀ",
        normal(&[4, 33, 17], 5, 1.0),
        transposed(normal(&[1, 29, 17], 6, 1.0)),
        true,
    );
}

#[test]
fn operands_that_do_not_fold_are_flex_s_batched_product() {
    // Per-batch right operands (attention's q · kᵀ).
    matmul_matches_flex(
        "[3, 8, 5] · [3, 5, 6]",
        normal(&[3, 8, 5], 7, 1.0),
        normal(&[3, 5, 6], 8, 1.0),
        false,
    );
    // A left operand whose batch does not step over its rows: [3, 5, 8] seen as [3, 8, 5].
    matmul_matches_flex(
        "[3, 5, 8]ᵀ · [1, 5, 6]",
        transposed(normal(&[3, 5, 8], 9, 1.0)),
        normal(&[1, 5, 6], 10, 1.0),
        false,
    );
    // Plain matrices are Flex's already.
    matmul_matches_flex(
        "[8, 5] · [5, 6]",
        normal(&[8, 5], 11, 1.0),
        normal(&[5, 6], 12, 1.0),
        false,
    );
}

fn bernoulli(shape: &[usize], p: f64) -> Vec<f64> {
    let t = once(&BERNOULLI_F32, "bernoulli", || {
        CpuFlex::float_random(
            Shape::from(shape.to_vec()),
            Distribution::Bernoulli(p),
            &device(),
            FloatDType::F32,
        )
    });
    assert_eq!(t.layout().shape().to_vec(), shape.to_vec());
    values(t)
}

#[test]
fn bernoulli_masks_are_zeros_and_ones_at_the_rate_asked_and_follow_the_seed() {
    let n = 200_003;
    for p in [0.1, 0.5, 0.9] {
        CpuFlex::seed(&device(), 7);
        let draws = bernoulli(&[n], p);
        assert!(draws.iter().all(|&v| v == 0.0 || v == 1.0));
        let rate = draws.iter().sum::<f64>() / n as f64;
        let sigma = (p * (1.0 - p) / n as f64).sqrt();
        assert!((rate - p).abs() < 6.0 * sigma, "p {p}: rate {rate}");
        // The same seed draws the same mask; the next draw is another.
        CpuFlex::seed(&device(), 7);
        assert_eq!(
            bernoulli(&[n], p),
            draws,
            "p {p}: the seed does not reproduce it"
        );
        assert_ne!(bernoulli(&[n], p), draws, "p {p}: two draws are the same");
    }
    assert!(bernoulli(&[1000], 0.0).iter().all(|&v| v == 0.0));
    assert!(bernoulli(&[1000], 1.0).iter().all(|&v| v == 1.0));
}

#[test]
fn other_distributions_and_dtypes_are_flex_s_draws() {
    let draw = |backend_is_cpu_flex: bool, distribution, dtype| {
        Flex::seed(&device(), 11);
        let shape = Shape::new([4, 33]);
        match backend_is_cpu_flex {
            true => counted(&BERNOULLI_F32, 0, "flex's draw", || {
                CpuFlex::float_random(shape, distribution, &device(), dtype)
            }),
            false => Flex::float_random(shape, distribution, &device(), dtype),
        }
    };
    for (distribution, dtype) in [
        (Distribution::Normal(0.0, 1.0), FloatDType::F32),
        (Distribution::Uniform(-1.0, 1.0), FloatDType::F32),
        (Distribution::Bernoulli(0.3), FloatDType::F64),
    ] {
        assert_identical(
            &format!("{distribution:?} {dtype:?}"),
            draw(true, distribution, dtype),
            draw(false, distribution, dtype),
        );
    }
}
