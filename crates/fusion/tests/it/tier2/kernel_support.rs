//! Shared by the tests of burnacc's CPU kernels on `CpuFlex` (`layer_norm`, `gelu`,
//! `bias_dropout_add`, `window_softmax`, `autodiff_kernels`): seeded f32 inputs as Flex
//! tensors, views that are not contiguous, the comparison against Flex's reference (the
//! trait's plain-Burn default methods, in f32 on the same inputs), and the counter check.
//!
//! No tests here.

use burn::backend::Flex;
use burn::backend::flex::{FlexDevice, FlexTensor};
use burn::tensor::ops::FloatTensorOps;
use burn::tensor::{FloatDType, Slice, TensorData};
use burnacc_fusion::counters::Counter;
use burnacc_tests::rng::HostRng;
use burnacc_tests::tolerance::{self, OpKind, Pass, Precision};

/// Flex's (and `CpuFlex`'s) one device.
pub fn device() -> FlexDevice {
    Default::default()
}

/// A contiguous f32 tensor of `shape` holding `values`.
pub fn from_values(values: Vec<f32>, shape: &[usize]) -> FlexTensor {
    Flex::float_from_data(TensorData::new(values, shape.to_vec()), &device())
}

/// Standard normal values times `scale`.
pub fn normal(shape: &[usize], seed: u64, scale: f32) -> FlexTensor {
    let mut rng = HostRng::new(seed);
    let n = shape.iter().product();
    from_values((0..n).map(|_| rng.normal() * scale).collect(), shape)
}

/// Values uniform in `[low, high)`.
pub fn uniform(shape: &[usize], seed: u64, low: f32, high: f32) -> FlexTensor {
    let mut rng = HostRng::new(seed);
    let n = shape.iter().product();
    from_values((0..n).map(|_| rng.uniform(low, high)).collect(), shape)
}

/// `t: [..., a, b]` (contiguous) viewed as `[..., b, a]` with its last two dimensions
/// swapped: a strided view, not a copy.
pub fn transposed(t: FlexTensor) -> FlexTensor {
    let rank = t.layout().num_dims();
    let view = Flex::float_swap_dims(t, rank - 2, rank - 1);
    assert!(!view.is_contiguous(), "a swapped view must be strided");
    view
}

/// The elements `start..` of the first dimension of `t`: contiguous, but at an offset into a
/// larger buffer.
pub fn offset_view(t: FlexTensor, start: usize) -> FlexTensor {
    let rank = t.layout().num_dims();
    let mut slices = vec![Slice::full(); rank];
    slices[0] = Slice::new(start as isize, None, 1);
    Flex::float_slice(t, &slices)
}

/// Columns `start..start + width` of the last dimension of `t`: rows at a stride larger than
/// their width.
pub fn columns(t: FlexTensor, start: usize, width: usize) -> FlexTensor {
    let rank = t.layout().num_dims();
    let mut slices = vec![Slice::full(); rank];
    slices[rank - 1] = Slice::new(start as isize, Some((start + width) as isize), 1);
    let view = Flex::float_slice(t, &slices);
    assert!(!view.is_contiguous(), "a column range must be strided");
    view
}

/// `t` cast to another float dtype (the kernels' fallback inputs).
pub fn cast(t: FlexTensor, dtype: FloatDType) -> FlexTensor {
    Flex::float_cast(t, dtype)
}

/// The shape of `t`.
pub fn shape(t: &FlexTensor) -> Vec<usize> {
    t.layout().shape().to_vec()
}

/// The values of `t` in row-major order, as f64.
pub fn values(t: FlexTensor) -> Vec<f64> {
    t.into_data().convert::<f64>().to_vec().unwrap()
}

/// `got` (`CpuFlex`) against `expected` (Flex) within the f32 tolerance of `kind` and `pass`:
/// same shape, same dtype, every element within the bound (the worst one reported).
pub fn assert_close(what: &str, got: FlexTensor, expected: FlexTensor, kind: OpKind, pass: Pass) {
    let dims = shape(&expected);
    assert_eq!(shape(&got), dims, "{what}: shape");
    assert_eq!(got.dtype(), expected.dtype(), "{what}: dtype");
    tolerance::assert_close(
        what,
        &dims,
        &values(got),
        &values(expected),
        Precision::F32,
        tolerance::tolerance(kind, Precision::F32, pass),
    );
}

/// `got` equal to `expected` element for element, with the same shape and dtype (the fallback
/// runs Flex's own code).
pub fn assert_identical(what: &str, got: FlexTensor, expected: FlexTensor) {
    assert_eq!(shape(&got), shape(&expected), "{what}: shape");
    assert_eq!(got.dtype(), expected.dtype(), "{what}: dtype");
    let (got, expected) = (got.into_data(), expected.into_data());
    assert_eq!(
        got.convert::<f64>().to_vec::<f64>().unwrap(),
        expected.convert::<f64>().to_vec::<f64>().unwrap(),
        "{what}: values"
    );
}

/// Runs `f` and asserts that it bumped `counter` exactly `calls` times (0: a fallback that
/// must not reach burnacc's kernels). Each test runs in a process of its own under
/// cargo-nextest, so nothing else moves the counter meanwhile.
pub fn counted<T>(counter: &Counter, calls: u64, what: &str, f: impl FnOnce() -> T) -> T {
    let before = counter.get();
    let result = f();
    assert_eq!(
        counter.get() - before,
        calls,
        "{what}: {} moved by {} (expected {calls})",
        counter.name(),
        counter.get() - before
    );
    result
}

/// [`counted`] for one kernel call.
pub fn once<T>(counter: &Counter, what: &str, f: impl FnOnce() -> T) -> T {
    counted(counter, 1, what, f)
}

/// timm's `relative_position_index` of a `[wh, ww]` window: `[n · n]` rows of the
/// `(2·wh − 1)(2·ww − 1)`-row bias table, `n = wh · ww`.
pub fn relative_position_index(window: [usize; 2]) -> Vec<i64> {
    let [wh, ww] = window.map(|s| s as i64);
    let n = wh * ww;
    let mut index = Vec::with_capacity((n * n) as usize);
    for q in 0..n {
        for k in 0..n {
            index.push((q / ww - k / ww + wh - 1) * (2 * ww - 1) + (q % ww - k % ww + ww - 1));
        }
    }
    index
}

/// A shifted-window mask `[num_windows, n, n]` as values: −100 between tokens of different
/// halves of a random labelling, never on the diagonal, so every row keeps an unmasked logit.
pub fn window_mask_values(num_windows: usize, n: usize, seed: u64) -> Vec<f32> {
    let mut rng = HostRng::new(seed);
    let labels: Vec<bool> = (0..num_windows * n).map(|_| rng.below(2) == 0).collect();
    let mut mask = Vec::with_capacity(num_windows * n * n);
    for w in 0..num_windows {
        for q in 0..n {
            for k in 0..n {
                let same = labels[w * n + q] == labels[w * n + k];
                mask.push(if same { 0.0 } else { -100.0 });
            }
        }
    }
    mask
}
