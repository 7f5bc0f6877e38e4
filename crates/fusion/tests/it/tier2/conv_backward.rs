//! burnacc's convolution backward (one GEMM over im2col columns) against Flex's (Burn's default
//! decomposition), on odd sizes, strides, padding, dilation and 1×1 kernels; the counters say
//! burnacc's kernels ran. The sums run in another order, so the bound is the f32 contraction
//! tolerance of the backward pass.

use burn::backend::Flex;
use burn::backend::flex::FlexTensor;
use burn::tensor::TensorData;
use burn::tensor::ops::{ConvOptions, FloatTensorOps, ModuleOps};
use burnacc_fusion::CpuFlex;
use burnacc_fusion::counters::{CONV2D_WEIGHT_BACKWARD, CONV2D_X_BACKWARD};
use burnacc_tests::rng::HostRng;
use burnacc_tests::tolerance::{OpKind, Pass, Precision, tolerance};

fn tensor(shape: [usize; 4], seed: u64) -> FlexTensor {
    let mut rng = HostRng::new(seed);
    let values: Vec<f32> = (0..shape.iter().product()).map(|_| rng.normal()).collect();
    Flex::float_from_data(TensorData::new(values, shape.to_vec()), &Default::default())
}

fn values(t: FlexTensor) -> Vec<f64> {
    t.into_data().convert::<f64>().to_vec().unwrap()
}

fn assert_close(what: &str, got: FlexTensor, expected: FlexTensor) {
    let bound = tolerance(OpKind::Contraction, Precision::F32, Pass::Backward);
    for (i, (g, e)) in values(got).into_iter().zip(values(expected)).enumerate() {
        assert!(
            bound.excess(g, e) <= 1.0,
            "{what} [{i}]: {g} vs {e} ({bound:?})"
        );
    }
}

/// x: `[n, c_in, h, w]`, weight `[c_out, c_in, k, k]`.
fn check(x: [usize; 4], c_out: usize, k: usize, stride: usize, padding: usize, dilation: usize) {
    let options = ConvOptions::new([stride; 2], [padding; 2], [dilation; 2], 1);
    let xt = tensor(x, 1);
    let w = tensor([c_out, x[1], k, k], 2);
    let y = Flex::conv2d(xt.clone(), w.clone(), None, options.clone());
    let dims = y.layout().shape().to_vec();
    let grad = tensor([dims[0], dims[1], dims[2], dims[3]], 3);
    let what = format!("x {x:?} c_out {c_out} k {k} s {stride} p {padding} d {dilation}");
    let (xb, wb) = (CONV2D_X_BACKWARD.get(), CONV2D_WEIGHT_BACKWARD.get());
    let dx = CpuFlex::conv2d_x_backward(xt.clone(), w.clone(), grad.clone(), options.clone());
    let dw = CpuFlex::conv2d_weight_backward(xt.clone(), w.clone(), grad.clone(), options.clone());
    assert_eq!(
        (
            CONV2D_X_BACKWARD.get() - xb,
            CONV2D_WEIGHT_BACKWARD.get() - wb
        ),
        (1, 1),
        "{what}: burnacc's kernels did not run"
    );
    assert_close(
        &format!("{what}: dx"),
        dx,
        Flex::conv2d_x_backward(xt.clone(), w.clone(), grad.clone(), options.clone()),
    );
    assert_close(
        &format!("{what}: dw"),
        dw,
        Flex::conv2d_weight_backward(xt, w, grad, options),
    );
}

#[test]
fn matches_burns_backward_on_resnet_shapes() {
    check([2, 3, 17, 13], 5, 7, 2, 3, 1); // stem: 7×7, stride 2, padding 3
    check([3, 8, 9, 9], 6, 3, 1, 1, 1); // 3×3 basic block
    check([2, 7, 9, 11], 5, 3, 2, 1, 1); // 3×3 downsampling, odd sizes
    check([2, 16, 5, 5], 33, 1, 1, 0, 1); // 1×1 bottleneck
    check([2, 16, 7, 7], 9, 1, 2, 0, 1); // 1×1 projection, stride 2
}

#[test]
fn matches_burns_backward_with_dilation() {
    check([1, 4, 12, 10], 3, 3, 1, 2, 2);
}

#[test]
fn matches_burns_backward_on_narrow_padded_images() {
    // Unit stride with padding wider than the image: kernel columns that read nothing, or
    // only part of each output row.
    check([2, 3, 4, 2], 4, 3, 1, 2, 1);
    check([1, 2, 3, 1], 2, 3, 1, 1, 1);
    check([2, 2, 5, 3], 3, 5, 1, 4, 1);
}
