//! burnacc's CPU kernels under `Autodiff<CpuFlex>` against `Autodiff<Flex>` (the plain-Burn
//! reference): the public `layer_norm`, `bias_gelu`, `quick_gelu`, `bias_dropout_add` and
//! `window_softmax` on `Tensor`s, a weighted sum as the loss, the forward output and the
//! gradient of every differentiable input compared; the counters say that `CpuFlex`'s forward
//! and backward kernels ran (one call each way per op), and that Flex's run touched neither.

use super::kernel_support::{relative_position_index, window_mask_values};
use burn::backend::{Autodiff, Flex};
use burn::tensor::backend::Backend;
use burn::tensor::{Int, Tensor, TensorData};
use burnacc_fusion::CpuFlex;
use burnacc_fusion::counters::{
    BIAS_DROPOUT_ADD_BACKWARD, BIAS_DROPOUT_ADD_FORWARD, Counter, GELU_BACKWARD, GELU_FORWARD,
    LAYER_NORM_BACKWARD, LAYER_NORM_FORWARD, WINDOW_SOFTMAX_BACKWARD, WINDOW_SOFTMAX_FORWARD,
};
use burnacc_kernels::bias_dropout_add::{BiasDropoutAddKernel, bias_dropout_add};
use burnacc_kernels::gelu::{GeluKernel, bias_gelu, quick_gelu};
use burnacc_kernels::layer_norm::{LayerNormKernel, layer_norm};
use burnacc_kernels::swin_attention::{SwinAttentionKernel, window_softmax};
use burnacc_tests::rng::HostRng;
use burnacc_tests::tolerance::{self, OpKind, Pass, Precision};

fn normal(n: usize, seed: u64, scale: f32) -> Vec<f32> {
    let mut rng = HostRng::new(seed);
    (0..n).map(|_| rng.normal() * scale).collect()
}

fn uniform(n: usize, seed: u64, low: f32, high: f32) -> Vec<f32> {
    let mut rng = HostRng::new(seed);
    (0..n).map(|_| rng.uniform(low, high)).collect()
}

fn tensor<B: Backend, const D: usize>(values: &[f32], dims: [usize; D]) -> Tensor<B, D> {
    Tensor::from_data(TensorData::new(values.to_vec(), dims), &Default::default())
}

/// A named result: the forward output or an input's gradient.
type Results = Vec<(&'static str, TensorData)>;

/// `CpuFlex`'s results against Flex's, name by name: the forward output (`forward`'s
/// tolerance) then the gradients (`backward`'s).
fn assert_all_close(what: &str, got: Results, expected: Results, kinds: &[(OpKind, Pass)]) {
    assert_eq!(got.len(), expected.len());
    for (((name, got), (name_ref, expected)), &(kind, pass)) in
        got.into_iter().zip(expected).zip(kinds)
    {
        assert_eq!(name, name_ref);
        let what = format!("{what}: {name}");
        assert_eq!(got.shape, expected.shape, "{what}: shape");
        tolerance::assert_close(
            &what,
            &expected.shape.to_vec(),
            &got.convert::<f64>().to_vec().unwrap(),
            &expected.convert::<f64>().to_vec().unwrap(),
            Precision::F32,
            tolerance::tolerance(kind, Precision::F32, pass),
        );
    }
}

/// Runs `f`, asserting that each counter moved by its expected count.
fn counted<T>(what: &str, expected: &[(&Counter, u64)], f: impl FnOnce() -> T) -> T {
    let before: Vec<u64> = expected.iter().map(|(c, _)| c.get()).collect();
    let result = f();
    for ((counter, calls), before) in expected.iter().zip(before) {
        assert_eq!(
            counter.get() - before,
            *calls,
            "{what}: {} moved by {} (expected {calls})",
            counter.name(),
            counter.get() - before
        );
    }
    result
}

/// The gradient of `t` as data.
fn grad<B: Backend, const D: usize>(
    t: &Tensor<Autodiff<B>, D>,
    grads: &<Autodiff<B> as burn::tensor::backend::AutodiffBackend>::Gradients,
    name: &str,
) -> TensorData {
    t.grad(grads)
        .unwrap_or_else(|| panic!("{name} has no gradient"))
        .into_data()
}

/// `y = layer_norm(x, γ, β)`, loss `Σ y · w`: `[y, dx, dγ, dβ]`.
fn layer_norm_run<B: LayerNormKernel>(dims: [usize; 3], seed: u64) -> Results {
    let numel = dims.iter().product();
    let width = [dims[2]];
    let x = tensor::<Autodiff<B>, 3>(&normal(numel, seed, 1.5), dims).require_grad();
    let gamma =
        tensor::<Autodiff<B>, 1>(&uniform(dims[2], seed + 1, 0.5, 1.5), width).require_grad();
    let beta =
        tensor::<Autodiff<B>, 1>(&uniform(dims[2], seed + 2, -0.5, 0.5), width).require_grad();
    let w = tensor::<Autodiff<B>, 3>(&normal(numel, seed + 3, 1.0), dims);
    let y = layer_norm(x.clone(), gamma.clone(), beta.clone(), 1e-5);
    let grads = (y.clone() * w).sum().backward();
    vec![
        ("y", y.into_data()),
        ("dx", grad(&x, &grads, "x")),
        ("dgamma", grad(&gamma, &grads, "gamma")),
        ("dbeta", grad(&beta, &grads, "beta")),
    ]
}

#[test]
fn layer_norm_gradients_match_flex() {
    let kinds = [
        (OpKind::Reduction, Pass::Forward),
        (OpKind::Reduction, Pass::Backward),
        (OpKind::Reduction, Pass::Backward),
        (OpKind::Reduction, Pass::Backward),
    ];
    for (dims, seed) in [([3, 17, 33], 1), ([2, 67, 768], 2)] {
        let what = format!("layer_norm {dims:?}");
        let ours = counted(
            &what,
            &[(&LAYER_NORM_FORWARD, 1), (&LAYER_NORM_BACKWARD, 1)],
            || layer_norm_run::<CpuFlex>(dims, seed),
        );
        let reference = counted(
            &what,
            &[(&LAYER_NORM_FORWARD, 0), (&LAYER_NORM_BACKWARD, 0)],
            || layer_norm_run::<Flex>(dims, seed),
        );
        assert_all_close(&what, ours, reference, &kinds);
    }
}

/// `y = bias_gelu(x, bias)` (or `quick_gelu(x)` when `quick`), loss `Σ y · w`:
/// `[y, dx]` and `dbias` when there is a bias.
fn gelu_run<B: GeluKernel>(dims: [usize; 3], seed: u64, with_bias: bool, quick: bool) -> Results {
    let numel = dims.iter().product();
    let x = tensor::<Autodiff<B>, 3>(&normal(numel, seed, 3.0), dims).require_grad();
    let bias = with_bias.then(|| {
        tensor::<Autodiff<B>, 1>(&normal(dims[2], seed + 1, 1.0), [dims[2]]).require_grad()
    });
    let w = tensor::<Autodiff<B>, 3>(&normal(numel, seed + 2, 1.0), dims);
    let y = if quick {
        quick_gelu(x.clone())
    } else {
        bias_gelu(x.clone(), bias.clone())
    };
    let grads = (y.clone() * w).sum().backward();
    let mut results = vec![("y", y.into_data()), ("dx", grad(&x, &grads, "x"))];
    if let Some(bias) = bias {
        results.push(("dbias", grad(&bias, &grads, "bias")));
    }
    results
}

#[test]
fn gelu_gradients_match_flex() {
    let kinds = [
        (OpKind::Elementwise, Pass::Forward),
        (OpKind::Elementwise, Pass::Backward),
        // The bias gradient sums dx over the rows.
        (OpKind::Reduction, Pass::Backward),
    ];
    let dims = [4, 37, 65];
    for (with_bias, quick) in [(true, false), (false, false), (false, true)] {
        let what = format!("gelu {dims:?}, bias {with_bias}, quick {quick}");
        let ours = counted(&what, &[(&GELU_FORWARD, 1), (&GELU_BACKWARD, 1)], || {
            gelu_run::<CpuFlex>(dims, 11, with_bias, quick)
        });
        let reference = counted(&what, &[(&GELU_FORWARD, 0), (&GELU_BACKWARD, 0)], || {
            gelu_run::<Flex>(dims, 11, with_bias, quick)
        });
        assert_all_close(&what, ours, reference, &kinds);
    }
}

/// `y = bias_dropout_add(x, bias, residual, p = 0.1, seed)`, loss `Σ y · w`:
/// `[y, dx, dbias, dresidual]`.
fn bias_dropout_add_run<B: BiasDropoutAddKernel>(dims: [usize; 3], seed: u64) -> Results {
    let numel = dims.iter().product();
    let x = tensor::<Autodiff<B>, 3>(&normal(numel, seed, 1.0), dims).require_grad();
    let bias = tensor::<Autodiff<B>, 1>(&normal(dims[2], seed + 1, 1.0), [dims[2]]).require_grad();
    let residual = tensor::<Autodiff<B>, 3>(&normal(numel, seed + 2, 1.0), dims).require_grad();
    let w = tensor::<Autodiff<B>, 3>(&normal(numel, seed + 3, 1.0), dims);
    let y = bias_dropout_add(
        x.clone(),
        Some(bias.clone()),
        residual.clone(),
        0.1,
        seed + 4,
    );
    let grads = (y.clone() * w).sum().backward();
    vec![
        ("y", y.into_data()),
        ("dx", grad(&x, &grads, "x")),
        ("dbias", grad(&bias, &grads, "bias")),
        ("dresidual", grad(&residual, &grads, "residual")),
    ]
}

#[test]
fn bias_dropout_add_gradients_match_flex() {
    let kinds = [
        (OpKind::Elementwise, Pass::Forward),
        (OpKind::Elementwise, Pass::Backward),
        (OpKind::Reduction, Pass::Backward),
        (OpKind::Elementwise, Pass::Backward),
    ];
    let dims = [3, 41, 33];
    let what = format!("bias_dropout_add {dims:?}");
    let ours = counted(
        &what,
        &[
            (&BIAS_DROPOUT_ADD_FORWARD, 1),
            (&BIAS_DROPOUT_ADD_BACKWARD, 1),
        ],
        || bias_dropout_add_run::<CpuFlex>(dims, 21),
    );
    let reference = counted(
        &what,
        &[
            (&BIAS_DROPOUT_ADD_FORWARD, 0),
            (&BIAS_DROPOUT_ADD_BACKWARD, 0),
        ],
        || bias_dropout_add_run::<Flex>(dims, 21),
    );
    // The same elements dropped: dx is 0 exactly at the same places.
    let zeros = |r: &Results| -> Vec<bool> { r[1].1.iter::<f32>().map(|v| v == 0.0).collect() };
    let dropped = zeros(&ours);
    assert_eq!(
        dropped,
        zeros(&reference),
        "{what}: dropped elements differ"
    );
    assert!(dropped.iter().any(|&d| d), "{what}: nothing dropped");
    assert_all_close(&what, ours, reference, &kinds);
}

/// timm's `relative_position_index` of a `wh × ww` window.
/// `p = window_softmax(scores, table, index, mask)` over `windows` windows of `window`
/// tokens and `heads` heads (mask of `windows / 2` windows, or none), loss `Σ p · w`:
/// `[p, dscores, dtable]`.
fn window_softmax_run<B: SwinAttentionKernel>(
    windows: usize,
    heads: usize,
    window: [usize; 2],
    masked: bool,
    seed: u64,
) -> Results {
    let n = window[0] * window[1];
    let offsets = (2 * window[0] - 1) * (2 * window[1] - 1);
    let dims = [windows, heads, n, n];
    let numel = dims.iter().product();
    let scores = tensor::<Autodiff<B>, 4>(&uniform(numel, seed, -4.0, 4.0), dims).require_grad();
    let table = tensor::<Autodiff<B>, 2>(
        &uniform(offsets * heads, seed + 1, -1.0, 1.0),
        [offsets, heads],
    )
    .require_grad();
    let index = relative_position_index(window);
    let index = Tensor::<Autodiff<B>, 1, Int>::from_data(
        TensorData::new(index, [n * n]),
        &Default::default(),
    );
    let mask = masked.then(|| {
        let num_windows = windows / 2;
        let mask = window_mask_values(num_windows, n, seed + 2);
        tensor::<Autodiff<B>, 3>(&mask, [num_windows, n, n])
    });
    let w = tensor::<Autodiff<B>, 4>(&uniform(numel, seed + 3, -1.0, 1.0), dims);
    let probs = window_softmax(scores.clone(), table.clone(), index, mask);
    let grads = (probs.clone() * w).sum().backward();
    vec![
        ("probs", probs.into_data()),
        ("dscores", grad(&scores, &grads, "scores")),
        ("dtable", grad(&table, &grads, "table")),
    ]
}

#[test]
fn window_softmax_gradients_match_flex() {
    let kinds = [
        (OpKind::Reduction, Pass::Forward),
        (OpKind::Reduction, Pass::Backward),
        // Σ over windows and the (q, k) pairs sharing a table row.
        (OpKind::Reduction, Pass::Backward),
    ];
    for (windows, heads, window, masked) in [
        (8, 3, [7, 7], true),
        (8, 3, [7, 7], false),
        (6, 2, [2, 2], true),
    ] {
        let what = format!("window_softmax {windows}×{heads}, window {window:?}, mask {masked}");
        let ours = counted(
            &what,
            &[(&WINDOW_SOFTMAX_FORWARD, 1), (&WINDOW_SOFTMAX_BACKWARD, 1)],
            || window_softmax_run::<CpuFlex>(windows, heads, window, masked, 31),
        );
        let reference = counted(
            &what,
            &[(&WINDOW_SOFTMAX_FORWARD, 0), (&WINDOW_SOFTMAX_BACKWARD, 0)],
            || window_softmax_run::<Flex>(windows, heads, window, masked, 31),
        );
        assert_all_close(&what, ours, reference, &kinds);
    }
}
