//! The error measure of the tests that compare a fused result with a reference backend.

use burn::tensor::Tensor;
use burn::tensor::backend::Backend;

/// The values of `t` as f64, in row-major order.
pub fn values<B: Backend, const D: usize>(t: Tensor<B, D>) -> Vec<f64> {
    t.into_data().convert::<f64>().to_vec().unwrap()
}

/// `max |got − expected| / max |expected|`, after checking the shapes match (`what` names the
/// result in the failure message).
pub fn relative_error<A: Backend, R: Backend, const D: usize>(
    what: &str,
    got: Tensor<A, D>,
    expected: Tensor<R, D>,
) -> f64 {
    assert_eq!(got.dims(), expected.dims(), "{what}: shape");
    let (got, expected) = (values(got), values(expected));
    let scale = expected.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let worst = got
        .iter()
        .zip(&expected)
        .fold(0.0f64, |m, (g, e)| m.max((g - e).abs()));
    worst / scale.max(f64::MIN_POSITIVE)
}

/// Panics unless `got` is within `tolerance` of `expected` by [`relative_error`], which it prints.
pub fn assert_within<A: Backend, R: Backend, const D: usize>(
    what: &str,
    got: Tensor<A, D>,
    expected: Tensor<R, D>,
    tolerance: f64,
) {
    let error = relative_error(what, got, expected);
    println!("{what}: relative error {error:e}");
    assert!(error <= tolerance, "{what}: relative error {error:e}");
}
