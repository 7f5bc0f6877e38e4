//! `CpuFlex`'s `linear` and its three backward ops against Flex's (Burn's default
//! decomposition over Flex's products), on rank-2, -3 and -4 inputs with odd sizes, inputs
//! that are permuted views, and f64 (Flex's products). The weight gradient sums its positions
//! in one product instead of per batch matrix, so the bound is the f32 contraction tolerance
//! of the backward pass; its counter proves the folded product ran.

use super::kernel_support::{assert_close, cast, counted, normal};
use burn::backend::Flex;
use burn::backend::flex::FlexTensor;
use burn::tensor::FloatDType;
use burn::tensor::ops::{FloatTensorOps, ModuleOps};
use burnacc_fusion::CpuFlex;
use burnacc_fusion::counters::LINEAR_WEIGHT_GRAD;
use burnacc_tests::tolerance::{OpKind, Pass};

/// Every linear op of `CpuFlex` against Flex's for input `x [.., in]` and `out` features.
fn linear_matches_flex(what: &str, x: FlexTensor, out: usize, seed: u64) {
    let dims = x.layout().shape().to_vec();
    let features = dims[dims.len() - 1];
    let weight = normal(&[features, out], seed, 0.3);
    let bias = normal(&[out], seed + 1, 1.0);
    let mut grad_dims = dims.clone();
    *grad_dims.last_mut().unwrap() = out;
    let grad = normal(&grad_dims, seed + 2, 1.0);

    let forward = |label: &str, bias: Option<FlexTensor>| {
        assert_close(
            &format!("{what}: forward{label}"),
            CpuFlex::linear(x.clone(), weight.clone(), bias.clone()),
            Flex::linear(x.clone(), weight.clone(), bias),
            OpKind::Contraction,
            Pass::Forward,
        );
    };
    forward(" with bias", Some(bias));
    forward(" without bias", None);
    assert_close(
        &format!("{what}: x gradient"),
        CpuFlex::linear_x_backward(weight.clone(), grad.clone()),
        Flex::linear_x_backward(weight.clone(), grad.clone()),
        OpKind::Contraction,
        Pass::Backward,
    );
    let weight_grad = counted(&LINEAR_WEIGHT_GRAD, 1, what, || {
        CpuFlex::linear_weight_backward(x.clone(), grad.clone())
    });
    assert_close(
        &format!("{what}: weight gradient"),
        weight_grad,
        Flex::linear_weight_backward(x.clone(), grad.clone()),
        OpKind::Contraction,
        Pass::Backward,
    );
    assert_close(
        &format!("{what}: bias gradient"),
        CpuFlex::linear_bias_backward(grad.clone()),
        Flex::linear_bias_backward(grad),
        OpKind::Reduction,
        Pass::Backward,
    );
}

#[test]
fn matches_flex_on_odd_shapes() {
    linear_matches_flex("rank 2", normal(&[13, 7], 1, 1.0), 5, 10);
    linear_matches_flex("rank 3", normal(&[3, 17, 9], 2, 1.0), 11, 20);
    linear_matches_flex("rank 4", normal(&[2, 3, 5, 8], 3, 1.0), 6, 30);
    linear_matches_flex("one position", normal(&[1, 1, 4], 4, 1.0), 3, 40);
}

#[test]
fn matches_flex_on_strided_inputs() {
    // Attention's context after its head merge: a permuted view.
    let permuted = Flex::float_permute(normal(&[2, 3, 7, 8], 5, 1.0), &[0, 2, 1, 3]);
    linear_matches_flex("permuted [2, 7, 3, 8]", permuted, 9, 50);
    let transposed = Flex::float_swap_dims(normal(&[6, 10], 6, 1.0), 0, 1);
    linear_matches_flex("transposed [10, 6]", transposed, 4, 60);
}

#[test]
fn f64_matches_flex() {
    let x = cast(normal(&[3, 5, 7], 7, 1.0), FloatDType::F64);
    let weight = cast(normal(&[7, 4], 8, 0.3), FloatDType::F64);
    let grad = cast(normal(&[3, 5, 4], 9, 1.0), FloatDType::F64);
    assert_close(
        "f64 forward",
        CpuFlex::linear(x.clone(), weight, None),
        Flex::linear(
            x.clone(),
            cast(normal(&[7, 4], 8, 0.3), FloatDType::F64),
            None,
        ),
        OpKind::Contraction,
        Pass::Forward,
    );
    assert_close(
        "f64 weight gradient",
        CpuFlex::linear_weight_backward(x.clone(), grad.clone()),
        Flex::linear_weight_backward(x, grad),
        OpKind::Contraction,
        Pass::Backward,
    );
}
