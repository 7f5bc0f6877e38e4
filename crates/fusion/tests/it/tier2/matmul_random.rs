//! `CpuFlex`'s `float_matmul` (a batch against one shared matrix as one product) and
//! `float_random` (Bernoulli masks from a counter-based hash) against Flex's, with the counters
//! that say which path ran.

use super::kernel_support::{
    assert_close, assert_identical, counted, device, normal, once, transposed, values,
};
use burn::backend::Flex;
use burn::backend::flex::FlexTensor;
use burn::tensor::backend::Backend;
use burn::tensor::ops::FloatTensorOps;
use burn::tensor::{Distribution, FloatDType, Shape};
use burnacc_fusion::CpuFlex;
use burnacc_fusion::counters::{BERNOULLI_F32, MATMUL_FOLDED_BATCH};
use burnacc_tests::tolerance::{OpKind, Pass};

fn matmul_matches_flex(what: &str, lhs: FlexTensor, rhs: FlexTensor, folded: bool) {
    let expected = Flex::float_matmul(lhs.clone(), rhs.clone());
    let calls = u64::from(folded);
    let got = counted(&MATMUL_FOLDED_BATCH, calls, what, || {
        CpuFlex::float_matmul(lhs, rhs)
    });
    assert_close(what, got, expected, OpKind::Contraction, Pass::Forward);
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
fn operands_that_do_not_fold_take_flex_s_batched_product() {
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
