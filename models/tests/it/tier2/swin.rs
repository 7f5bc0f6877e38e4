//! Swin Transformer against timm: parameter counts and names, window bookkeeping, forward
//! parity on two reduced models, weight loading, and one backward pass.
//!
//! The fixtures `tests/fixtures/swin_w7_56px.safetensors` and `swin_w4_36px.safetensors` are
//! written by `scripts/record_swin_fixture.py` (timm 1.0.31, torch 2.15, float32, eval mode):
//! each holds a reduced timm `SwinTransformer`'s parameters under their `state_dict` keys, a
//! fixed input batch, the NHWC output of every stage and the logits, and as metadata the
//! model's kwargs and the names and shapes of the full `swin_tiny_patch4_window7_224`.

use std::collections::HashMap;

use burn::backend::{Autodiff, Flex, NdArray};
use burn::module::{AutodiffModule, Module, ModuleVisitor, Param};
use burn::nn::loss::CrossEntropyLossConfig;
use burn::tensor::backend::Backend;
use burn::tensor::{Distribution, Int, Tensor};
use burnacc_models::swin::{
    SHIFTED_WINDOW_MASK, SwinConfig, SwinTransformer, cyclic_shift, drop_path, load_timm_swin,
    load_timm_swin_backbone, window_partition, window_reverse,
};
use burnacc_models::{named_tensors, num_trainable_params, torch_key};
use burnacc_tests::tolerance::{PYTORCH_FIXTURE_F32, TIMM_SWIN_LOGITS_ABS};

use crate::fixture::{Fixture, fixture_path};

type F = Flex;

const FIXTURES: [&str; 2] = ["swin_w7_56px", "swin_w4_36px"];

const SCRIPT: &str = "record_swin_fixture.py";

/// `(key, shape)` of every model parameter in the fixture, sorted.
fn parameter_shapes(fixture: &Fixture) -> Vec<(String, Vec<usize>)> {
    fixture
        .keys()
        .into_iter()
        .filter(|k| !is_recorded_activation(k))
        .map(|k| {
            let shape = fixture.floats(&k).0.clone();
            (k, shape)
        })
        .collect()
}

/// The fixture's non-parameter tensors: input, stage outputs, logits.
fn is_recorded_activation(key: &str) -> bool {
    key == "input" || key == "logits" || key.starts_with("stage")
}

/// `(timm key, PyTorch shape)` of every trainable tensor of `model`, in visit order: Burn's
/// `Linear` weights (`[in, out]`, the only 2-D `*.weight`s) are transposed back.
fn timm_keys<B: Backend, M: Module<B>>(model: &M) -> Vec<(String, Vec<usize>)> {
    named_tensors(model)
        .into_iter()
        .filter(|t| t.trainable)
        .map(|t| {
            let mut shape = t.shape.clone();
            if shape.len() == 2 && t.path.ends_with(".weight") {
                shape.reverse();
            }
            (torch_key(&t.path), shape)
        })
        .collect()
}

fn max_abs_diff(a: &[f32], b: &[f32]) -> f64 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .fold(0.0, |m, (x, y)| m.max((*x as f64 - *y as f64).abs()))
}

fn max_abs(a: &[f32]) -> f64 {
    a.iter().fold(0.0, |m, x| m.max((*x as f64).abs()))
}

fn values<B: Backend, const D: usize>(t: Tensor<B, D>) -> Vec<f32> {
    t.into_data().convert::<f32>().to_vec().unwrap()
}

// ---- sizes and names ---------------------------------------------------------------------

/// timm's `sum(p.numel() for p in model.parameters())` at 1000 classes (also recorded in the
/// fixtures' `param_counts`). Parameters are initialised lazily, so even Swin-B costs nothing.
#[test]
fn trainable_parameter_counts_match_timm() {
    let device = Default::default();
    let recorded: HashMap<String, usize> =
        serde_json::from_str(&Fixture::open(FIXTURES[0], SCRIPT).metadata["param_counts"]).unwrap();
    let cases = [
        ("swin_tiny_patch4_window7_224", 28_288_354),
        ("swin_small_patch4_window7_224", 49_606_258),
        ("swin_base_patch4_window7_224", 87_768_224),
    ];
    for (name, expected) in cases {
        assert_eq!(recorded[name], expected, "{name} (fixture)");
        let model = SwinConfig::from_name(name, 1000)
            .unwrap()
            .init::<F>(&device);
        assert_eq!(num_trainable_params(&model), expected, "{name}");
    }
    assert!(SwinConfig::from_name("swin_huge", 10).is_err());
}

/// Every parameter of Swin-T, in order, with timm's key and PyTorch shape (173 tensors).
#[test]
fn swin_tiny_parameter_names_and_shapes_match_timm_state_dict() {
    let fixture = Fixture::open(FIXTURES[0], SCRIPT);
    let timm: Vec<(String, Vec<usize>)> =
        serde_json::from_str(&fixture.metadata["swin_tiny_state_dict"]).unwrap();
    assert_eq!(timm.len(), 173);
    let model = SwinConfig::swin_tiny(1000).init::<F>(&Default::default());
    let ours = timm_keys(&model);
    for (i, (a, b)) in ours.iter().zip(&timm).enumerate() {
        assert_eq!(a, b, "tensor {i}");
    }
    assert_eq!(ours.len(), timm.len());
    // Only parameters are visited: no buffer (index, mask) or running statistic.
    assert!(named_tensors(&model).iter().all(|t| t.trainable));
}

/// The reduced models' parameters are exactly the fixtures' tensors (names and shapes): small
/// images clamp the window, which shrinks the relative position tables as in timm.
#[test]
fn reduced_parameter_names_and_shapes_match_the_fixtures() {
    for name in FIXTURES {
        let fixture = Fixture::open(name, SCRIPT);
        let model = fixture.swin_config().init::<F>(&Default::default());
        let mut ours = timm_keys(&model);
        ours.sort();
        assert_eq!(ours, parameter_shapes(&fixture), "{name}");
    }
}

#[test]
fn stage_geometry_follows_timm() {
    let tiny = SwinConfig::swin_tiny(1000);
    let resolutions: Vec<_> = (0..4).map(|s| tiny.stage_resolution(s)[0]).collect();
    assert_eq!(resolutions, [56, 28, 14, 7]);
    for stage in 0..3 {
        let g = tiny.block_geometry(stage, 1);
        assert_eq!((g.window, g.shift), ([7, 7], [3, 3]), "stage {stage}");
        assert!(!tiny.block_geometry(stage, 0).is_shifted());
    }
    // 7 × 7 fits in one window: no shift on the last stage.
    assert_eq!(tiny.block_geometry(3, 1).shift, [0, 0]);

    // 32 px (CIFAR): the 8 × 8 grid is padded to 14 × 14 for window 7, later stages clamp.
    let cifar = SwinConfig::new(10).with_img_size(32);
    let g = cifar.block_geometry(0, 1);
    assert_eq!((g.resolution, g.window, g.shift), ([8, 8], [7, 7], [3, 3]));
    let g = cifar.block_geometry(1, 1);
    assert_eq!((g.resolution, g.window, g.shift), ([4, 4], [4, 4], [0, 0]));
    assert_eq!(cifar.stage_resolution(3), [1, 1]);

    // timm: linspace(0, 0.1, 12) split [2, 2, 6, 2].
    let rates = tiny.drop_path_rates();
    assert_eq!(rates.iter().map(Vec::len).collect::<Vec<_>>(), [2, 2, 6, 2]);
    assert_eq!(rates[0][0], 0.0);
    assert!((rates[3][1] - 0.1).abs() < 1e-12);
    assert!((rates[1][0] - 0.2 / 11.0).abs() < 1e-12);
}

/// Swin-T's layout at 224 px (56 → 28 → 14 → 7, window 7 everywhere), narrowed to 8
/// channels so that the forward pass is cheap: shapes of every stage and of the logits.
#[test]
fn swin_tiny_layout_at_224px_shapes() {
    let device = Default::default();
    let model = SwinConfig::swin_tiny(10)
        .with_embed_dim(8)
        .with_num_heads(vec![1, 2, 4, 8])
        .init::<F>(&device);
    let geometries: Vec<_> = model.blocks().map(|b| b.geometry()).collect();
    assert_eq!(geometries.len(), 12);
    assert!(geometries.iter().all(|g| g.window == [7, 7]));
    let shifted = geometries.iter().filter(|g| g.is_shifted()).count();
    assert_eq!(shifted, 1 + 1 + 3); // odd blocks of stages 0-2; stage 3 is one window
    let images = Tensor::<F, 4>::random([1, 3, 224, 224], Distribution::Default, &device);
    let mut x = model.stem(images.clone());
    assert_eq!(x.dims(), [1, 56, 56, 8]);
    for (i, stage) in model.layers.iter().enumerate() {
        x = stage.forward(x);
        assert_eq!(x.dims(), [1, 56 >> i, 56 >> i, 8 << i], "stage {i}");
    }
    assert_eq!(model.forward(images).dims(), [1, 10]);
}

#[test]
fn impossible_configurations_are_refused_with_the_field() {
    let err = SwinConfig::new(10)
        .with_num_heads(vec![3, 6, 12])
        .validate()
        .unwrap_err()
        .to_string();
    assert!(err.contains("depths") && err.contains("num_heads"), "{err}");
    let err = SwinConfig::new(10)
        .with_embed_dim(10)
        .validate()
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("stage 0") && err.contains("10 channels"),
        "{err}"
    );
    let err = SwinConfig::new(10)
        .with_drop_path_rate(1.5)
        .validate()
        .unwrap_err()
        .to_string();
    assert!(err.contains("drop_path_rate = 1.5"), "{err}");
}

// ---- window bookkeeping ------------------------------------------------------------------

#[test]
fn cyclic_shift_is_torch_roll() {
    let device = Default::default();
    // [1, 3, 4, 1] holding 0..12 row-major.
    let x = Tensor::<F, 1, Int>::arange(0..12, &device)
        .float()
        .reshape([1, 3, 4, 1]);
    // torch.roll(x, shifts=(1, -1), dims=(1, 2))
    let rolled = values(cyclic_shift(x.clone(), 1, -1));
    let expected = [9., 10., 11., 8., 1., 2., 3., 0., 5., 6., 7., 4.];
    assert_eq!(rolled, expected);
    // Shifting back restores the map.
    let back = cyclic_shift(cyclic_shift(x.clone(), -2, 3), 2, -3);
    assert_eq!(values(back), values(x));
}

#[test]
fn window_partition_and_reverse_invert_each_other() {
    let device = Default::default();
    let x = Tensor::<F, 4>::random([2, 6, 4, 3], Distribution::Default, &device);
    let windows = window_partition(x.clone(), [3, 2]);
    assert_eq!(windows.dims(), [2 * 2 * 2, 6, 3]);
    // Window 1 of image 0 is rows 0..3, columns 2..4, row-major.
    let expected = x.clone().slice([0..1, 0..3, 2..4, 0..3]).reshape([6, 3]);
    let got = windows.clone().slice([1..2, 0..6, 0..3]).reshape([6, 3]);
    assert_eq!(values(got), values(expected));
    assert_eq!(values(window_reverse(windows, [3, 2], [6, 4])), values(x));
}

#[test]
fn shifted_window_mask_separates_regions() {
    use burnacc_models::swin::window::shifted_window_mask_values;
    // 8 × 8 map, window 4, shift 2: 4 windows of 16 tokens.
    let mask = shifted_window_mask_values([8, 8], [4, 4], [2, 2]);
    let n = 16;
    let at = |w: usize, q: usize, k: usize| mask[(w * n + q) * n + k];
    // The top-left window holds one region: nothing masked.
    assert!((0..n * n).all(|i| at(0, i / n, i % n) == 0.0));
    // The bottom-right window holds four 2 × 2 regions: token (0,0) sees only (0,1), (1,0),
    // (1,1) besides itself, and is masked from (0,2).
    assert_eq!(at(3, 0, 1), 0.0);
    assert_eq!(at(3, 0, 5), 0.0);
    assert_eq!(at(3, 0, 2), SHIFTED_WINDOW_MASK);
    assert_eq!(at(3, 0, 10), SHIFTED_WINDOW_MASK);
    let masked = (0..n * n).filter(|&i| at(3, i / n, i % n) != 0.0).count();
    assert_eq!(masked, n * n - 4 * 4 * 4);
    // Symmetric everywhere.
    for w in 0..4 {
        for q in 0..n {
            for k in 0..n {
                assert_eq!(at(w, q, k), at(w, k, q));
            }
        }
    }
}

// ---- parity with timm --------------------------------------------------------------------

/// Loads the fixture's weights, runs its input and compares stage outputs and logits.
fn check_parity<B: Backend>(name: &str, backend: &str) {
    let device = Default::default();
    let fixture = Fixture::open(name, SCRIPT);
    let config = fixture.swin_config();
    let mut model: SwinTransformer<B> = config.init(&device);
    let report = load_timm_swin(&mut model, &fixture_path(name)).unwrap();
    let params = parameter_shapes(&fixture).len();
    assert_eq!(report.applied, params, "{report:?}");
    assert!(report.missing.is_empty(), "{report:?}");
    let mut unused = report.unused.clone();
    unused.sort();
    assert_eq!(
        unused,
        ["input", "logits", "stage0", "stage1", "stage2", "stage3"]
    );

    let input: Tensor<B, 4> = fixture.tensor("input", &device);
    let mut x = model.stem(input.clone());
    for (i, stage) in model.layers.iter().enumerate() {
        x = stage.forward(x);
        let key = format!("stage{i}");
        let got = values(x.clone());
        let (shape, expected) = fixture.floats(&key);
        assert_eq!(x.dims().to_vec(), *shape, "{name} {key}");
        let diff = max_abs_diff(&got, expected);
        let scale = max_abs(expected);
        eprintln!("{name} [{backend}] {key}: max |diff| {diff:.3e}, max |ref| {scale:.3}");
        assert!(
            diff <= PYTORCH_FIXTURE_F32 * scale,
            "{name} {key}: max |diff| {diff:e} > {PYTORCH_FIXTURE_F32} × {scale}"
        );
    }

    let logits = values(model.forward(input));
    let expected = &fixture.floats("logits").1;
    let diff = max_abs_diff(&logits, expected);
    eprintln!(
        "{name} [{backend}] logits: max |diff| {diff:.3e}, max |ref| {:.3}",
        max_abs(expected)
    );
    assert!(
        diff <= TIMM_SWIN_LOGITS_ABS,
        "{name}: max |diff| {diff:e} > {TIMM_SWIN_LOGITS_ABS}"
    );
}

/// Window 7 on 56 px: shifted windows with the −100 mask at 14 × 14, window = resolution at
/// 7 × 7, clamped windows below.
#[test]
fn swin_w7_56px_matches_timm_on_flex() {
    check_parity::<F>("swin_w7_56px", "flex");
}

/// Window 4 on 36 px: zero padding before attention (9 → 12, 5 → 8) and before patch merging
/// (9 → 10, 5 → 6, 3 → 4), shifted masks built on the padded maps.
#[test]
fn swin_w4_36px_matches_timm_on_flex() {
    check_parity::<F>("swin_w4_36px", "flex");
}

#[test]
fn swin_matches_timm_on_ndarray() {
    for name in FIXTURES {
        check_parity::<NdArray<f32>>(name, "ndarray");
    }
}

/// A backbone load keeps a fresh classifier of another size; a bad file is named.
#[test]
fn backbone_loading_and_errors() {
    let device = Default::default();
    let name = FIXTURES[0];
    let mut config = Fixture::open(name, SCRIPT).swin_config();
    config.num_classes = 5;
    let mut model: SwinTransformer<F> = config.init(&device);
    let full = load_timm_swin(&mut model, &fixture_path(name))
        .unwrap_err()
        .to_string();
    assert!(full.contains("do not fit") && full.contains(name), "{full}");

    let mut model: SwinTransformer<F> = config.init(&device);
    let report = load_timm_swin_backbone(&mut model, &fixture_path(name)).unwrap();
    assert_eq!(report.missing, ["head.fc.bias", "head.fc.weight"]);
    let fixture_params = parameter_shapes(&Fixture::open(name, SCRIPT)).len();
    assert_eq!(report.applied, fixture_params - 2, "{report:?}");
    assert_eq!(model.num_classes(), 5);
    let logits = model.forward(Fixture::open(name, SCRIPT).tensor("input", &device));
    assert_eq!(logits.dims(), [2, 5]);

    let tmp = tempfile::tempdir().unwrap();
    let bad = tmp.path().join("model.safetensors");
    std::fs::write(&bad, b"not a safetensors file").unwrap();
    let err = load_timm_swin(&mut model, &bad).unwrap_err().to_string();
    assert!(err.contains(&bad.display().to_string()), "{err}");
}

// ---- training ----------------------------------------------------------------------------

type AB = Autodiff<NdArray<f32>>;

/// Checks that every trainable parameter received a finite, non-zero gradient.
struct GradientCheck<'a> {
    grads: &'a <AB as burn::tensor::backend::AutodiffBackend>::Gradients,
    path: Vec<String>,
    checked: usize,
}

impl ModuleVisitor<AB> for GradientCheck<'_> {
    fn enter_module(&mut self, name: &str, _container_type: &str) {
        self.path.push(name.to_string());
    }

    fn exit_module(&mut self, _name: &str, _container_type: &str) {
        self.path.pop();
    }

    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<AB, D>>) {
        let path = self.path.join(".");
        let grad = param
            .val()
            .grad(self.grads)
            .unwrap_or_else(|| panic!("no gradient for {path}"));
        assert!(
            grad.clone().is_finite().all().into_scalar(),
            "non-finite gradient for {path}"
        );
        let largest = grad.abs().max().into_scalar();
        assert!(largest > 0.0, "zero gradient for {path}");
        self.checked += 1;
    }
}

/// 32 px images with window 7 (the CIFAR set-up): stage 0 pads 8 → 14 and runs the shifted
/// mask, stage 1 clamps the window. Drop path off so that no branch is dropped for the whole
/// batch (which would legitimately zero its gradients).
#[test]
fn tiny_training_step_reaches_every_parameter() {
    let device = Default::default();
    let config = SwinConfig::new(3)
        .with_img_size(32)
        .with_embed_dim(8)
        .with_depths(vec![2, 2])
        .with_num_heads(vec![2, 4])
        .with_drop_path_rate(0.0);
    let model: SwinTransformer<AB> = config.init(&device);
    let images = Tensor::<AB, 4>::random([2, 3, 32, 32], Distribution::Default, &device);
    let targets = Tensor::<AB, 1, Int>::from_ints([0, 2], &device);
    let logits = model.forward(images.clone());
    assert_eq!(logits.dims(), [2, 3]);
    let loss = CrossEntropyLossConfig::new()
        .init(&device)
        .forward(logits.clone(), targets);
    assert!(loss.clone().into_scalar().is_finite());
    let grads = loss.backward();
    let mut check = GradientCheck {
        grads: &grads,
        path: Vec::new(),
        checked: 0,
    };
    model.visit(&mut check);
    assert_eq!(check.checked, named_tensors(&model).len());
    // 4 stem + 2 · 2 · 13 block tensors + 3 merging + 2 norm + 2 head.
    assert_eq!(check.checked, 4 + 52 + 3 + 2 + 2);

    // Without dropout or drop path the inference model computes the same logits.
    let valid = model.valid();
    let inner = Tensor::from_inner(valid.forward(images.inner()));
    let diff = logits.sub(inner).abs().max().into_scalar();
    assert!(diff < 1e-6, "{diff}");
}

#[test]
fn drop_path_drops_whole_samples_when_training_only() {
    let device = Default::default();
    let x = Tensor::<AB, 3>::ones([64, 5, 3], &device);
    let y = values(drop_path(x.clone(), 0.5));
    let mut dropped = 0;
    for sample in y.chunks(15) {
        assert!(
            sample.iter().all(|&v| v == 0.0) || sample.iter().all(|&v| v == 2.0),
            "{sample:?}"
        );
        dropped += usize::from(sample[0] == 0.0);
    }
    assert!((8..=56).contains(&dropped), "{dropped} of 64 dropped");
    // On the inference backend it is the identity.
    let inner = drop_path(x.inner(), 0.5);
    assert_eq!(values(inner), vec![1.0; 64 * 15]);
}
