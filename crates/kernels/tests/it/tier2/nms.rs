//! Tier 2: the NMS family against torchvision and mmcv's semantics.
//!
//! `tests/fixtures/nms.safetensors` (`scripts/record_nms_fixtures.py`) holds five cases
//! (300 random boxes with tied scores and 5 classes, 5000 boxes with 20 classes, one box, no
//! box, six identical boxes) and, for each, torchvision's `nms` and `batched_nms` at IoU 0.3,
//! 0.5 and 0.7, greedy NMS with mmcv's `+1` areas, and mmcv's soft-NMS (naive, linear,
//! Gaussian; per class too) as its CPU kernel computes it in float32.

use std::collections::HashMap;
use std::path::PathBuf;

use burn::backend::{Autodiff, Flex, Wgpu};
use burn::tensor::{Int, Tensor, TensorData};
use burnacc_backend::Acc;
use burnacc_kernels::nms::counters::{soft_nms_launches, suppression_mask_launches};
use burnacc_kernels::nms::{
    NmsError, NmsKernel, SoftNmsConfig, SoftNmsMethod, batched_nms, batched_soft_nms, nms,
    nms_normal, reference, soft_nms,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use safetensors::SafeTensors;
use safetensors::tensor::Dtype;

type B = Flex;

const CASES: [&str; 5] = ["random", "large", "one", "empty", "identical"];
const THRESHOLDS: [&str; 3] = ["0.3", "0.5", "0.7"];

/// The fixture's tensors: f32 or i64 values with their shapes.
struct Fixture {
    floats: HashMap<String, (Vec<usize>, Vec<f32>)>,
    ints: HashMap<String, Vec<i64>>,
}

impl Fixture {
    fn open() -> Self {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/nms.safetensors");
        let bytes = std::fs::read(&path).unwrap_or_else(|e| {
            panic!(
                "{}: {e} (record it with: python3 scripts/record_nms_fixtures.py)",
                path.display()
            )
        });
        let file = SafeTensors::deserialize(&bytes).unwrap();
        let mut floats = HashMap::new();
        let mut ints = HashMap::new();
        for (key, view) in file.tensors() {
            match view.dtype() {
                Dtype::F32 => {
                    let values = view.data().chunks_exact(4);
                    let values = values.map(|b| f32::from_le_bytes(b.try_into().unwrap()));
                    floats.insert(key, (view.shape().to_vec(), values.collect()));
                }
                Dtype::I64 => {
                    let values = view.data().chunks_exact(8);
                    let values = values.map(|b| i64::from_le_bytes(b.try_into().unwrap()));
                    ints.insert(key, values.collect());
                }
                other => panic!("{key}: {other:?}"),
            }
        }
        Self { floats, ints }
    }

    /// Boxes, scores and classes of `case` on backend `D`'s default device.
    fn inputs_on<D: NmsKernel>(
        &self,
        case: &str,
    ) -> (Tensor<D, 2>, Tensor<D, 1>, Tensor<D, 1, Int>) {
        let device = Default::default();
        let (_, boxes) = &self.floats[&format!("{case}.boxes")];
        let (_, scores) = &self.floats[&format!("{case}.scores")];
        let classes = &self.ints[&format!("{case}.classes")];
        let n = scores.len();
        (
            Tensor::from_data(TensorData::new(boxes.clone(), [n, 4]), &device),
            Tensor::from_data(TensorData::new(scores.clone(), [n]), &device),
            Tensor::from_data(TensorData::new(classes.clone(), [n]), &device),
        )
    }
}

fn ints<D: NmsKernel>(t: Tensor<D, 1, Int>) -> Vec<i64> {
    t.into_data().convert::<i64>().to_vec().unwrap()
}

fn floats<D: NmsKernel>(t: Tensor<D, 1>) -> Vec<f32> {
    t.into_data().convert::<f32>().to_vec().unwrap()
}

/// `indices` ordered by decreasing `scores`, ties by increasing index.
fn by_score_then_index(mut indices: Vec<i64>, scores: &[f32]) -> Vec<i64> {
    indices.sort_by(|&a, &b| {
        scores[b as usize]
            .total_cmp(&scores[a as usize])
            .then(a.cmp(&b))
    });
    indices
}

#[test]
fn nms_and_nms_normal_match_torchvision_and_mmcv() {
    greedy_nms_matches_the_fixtures::<B>(&Fixture::open());
}

fn greedy_nms_matches_the_fixtures<D: NmsKernel>(f: &Fixture) {
    for case in CASES {
        for t in THRESHOLDS {
            let threshold: f32 = t.parse().unwrap();
            let (boxes, scores, _) = f.inputs_on::<D>(case);
            let got = ints(nms(boxes.clone(), scores.clone(), threshold).unwrap());
            assert_eq!(got, f.ints[&format!("{case}.nms.{t}")], "{case} nms {t}");
            let got = ints(nms_normal(boxes, scores, threshold).unwrap());
            assert_eq!(
                got,
                f.ints[&format!("{case}.nms_normal.{t}")],
                "{case} nms_normal {t}"
            );
        }
    }
    // Six identical boxes of equal score: the first alone survives, whatever the threshold.
    let (boxes, scores, _) = f.inputs_on::<D>("identical");
    assert_eq!(ints(nms(boxes, scores, 0.99).unwrap()), [0]);
}

#[test]
fn batched_nms_matches_torchvision() {
    batched_nms_matches_the_fixtures::<B>(&Fixture::open());
}

fn batched_nms_matches_the_fixtures<D: NmsKernel>(f: &Fixture) {
    for case in CASES {
        let scores_host = &f.floats[&format!("{case}.scores")].1;
        for t in THRESHOLDS {
            let (boxes, scores, classes) = f.inputs_on::<D>(case);
            let got = ints(batched_nms(boxes, scores, classes, t.parse().unwrap()).unwrap());
            // torchvision's per-class path (above 4000 coordinates) leaves the order of equal
            // scores unspecified; ours is by index.
            let expected =
                by_score_then_index(f.ints[&format!("{case}.batched.{t}")].clone(), scores_host);
            assert_eq!(got, expected, "{case} batched_nms {t}");
        }
    }
}

/// Within 1e-5 relative: a score decayed by many boxes in turn carries the last-bit
/// differences of each `exp` (Rust's, numpy's, the device's).
fn close(got: f32, want: f32) -> bool {
    (got - want).abs() <= 1e-5 * want.abs().max(1e-3)
}

/// How exactly a soft-NMS result must follow the fixture's selection order.
#[derive(Clone, Copy, PartialEq)]
enum Order {
    /// Index for index.
    Exact,
    /// Index for index except among scores within [`close`] of each other: a device `exp`
    /// within Vulkan's few-ulp bound may decay one of two boxes a last bit more than the
    /// host's `expf` does and so select them the other way round. The same boxes are kept,
    /// each with its score within [`close`], and the k-th selected score is within it too.
    UpToNearTies,
}

/// Indices (see [`Order`]) and decayed scores (within [`close`]) against the fixture.
fn assert_soft(
    case: &str,
    what: &str,
    indices: Vec<i64>,
    scores: Vec<f32>,
    f: &Fixture,
    order: Order,
) {
    let expected_indices = &f.ints[&format!("{case}.{what}.index")];
    let expected = &f.floats[&format!("{case}.{what}.score")].1;
    if order == Order::Exact {
        assert_eq!(&indices, expected_indices, "{case} {what}: indices");
    } else {
        let by_index = |i: &[i64], s: &[f32]| {
            let mut pairs: Vec<(i64, f32)> = i.iter().copied().zip(s.iter().copied()).collect();
            pairs.sort_by_key(|p| p.0);
            pairs
        };
        let (got, want) = (
            by_index(&indices, &scores),
            by_index(expected_indices, expected),
        );
        assert_eq!(got.len(), want.len(), "{case} {what}: kept boxes");
        for (g, w) in got.iter().zip(&want) {
            assert!(
                g.0 == w.0 && close(g.1, w.1),
                "{case} {what}: {g:?} vs {w:?}"
            );
        }
    }
    for (k, (&got, &want)) in scores.iter().zip(expected).enumerate() {
        assert!(
            close(got, want),
            "{case} {what}: score {k}: {got} vs {want}"
        );
    }
}

#[test]
fn soft_nms_matches_mmcv_for_every_method() {
    soft_nms_matches_the_fixtures::<B>(&Fixture::open(), Order::Exact);
}

/// Every case and method; `gaussian`: how exactly the Gaussian decay must follow the order.
fn soft_nms_matches_the_fixtures<D: NmsKernel>(f: &Fixture, gaussian: Order) {
    let methods = [
        ("naive", SoftNmsMethod::Naive),
        ("linear", SoftNmsMethod::Linear),
        ("gaussian", SoftNmsMethod::Gaussian),
    ];
    for case in CASES {
        for (name, method) in methods {
            let (boxes, scores, _) = f.inputs_on::<D>(case);
            let config = SoftNmsConfig {
                method,
                ..SoftNmsConfig::default()
            };
            let out = soft_nms(boxes.clone(), scores, config).unwrap();
            let indices = ints(out.indices);
            // The kept boxes are the inputs' rows.
            let kept: Vec<f32> = out.boxes.into_data().convert::<f32>().to_vec().unwrap();
            let all: Vec<f32> = boxes.into_data().convert::<f32>().to_vec().unwrap();
            for (row, &i) in indices.iter().enumerate() {
                assert_eq!(
                    kept[row * 4..row * 4 + 4],
                    all[i as usize * 4..i as usize * 4 + 4]
                );
            }
            let order = if method == SoftNmsMethod::Gaussian {
                gaussian
            } else {
                Order::Exact
            };
            assert_soft(
                case,
                &format!("soft.{name}"),
                indices,
                floats(out.scores),
                f,
                order,
            );
        }
        let (boxes, scores, classes) = f.inputs_on::<D>(case);
        let out = batched_soft_nms(boxes, scores, classes, SoftNmsConfig::default()).unwrap();
        assert_soft(
            case,
            "batched_soft.linear",
            ints(out.indices),
            floats(out.scores),
            f,
            Order::Exact,
        );
    }
}

#[test]
fn bad_input_is_refused_naming_the_argument() {
    let device = Default::default();
    let boxes = |values: Vec<f32>, n: usize| {
        Tensor::<B, 2>::from_data(TensorData::new(values, [n, 4]), &device)
    };
    let scores =
        |n: usize| Tensor::<B, 1>::from_data(TensorData::new(vec![0.5f32; n], [n]), &device);
    let good = boxes(vec![0.0, 0.0, 2.0, 2.0, 1.0, 1.0, 3.0, 3.0], 2);

    let three = Tensor::<B, 2>::from_data(TensorData::new(vec![0.0f32; 6], [2, 3]), &device);
    assert_eq!(
        nms(three, scores(2), 0.5).unwrap_err(),
        NmsError::BoxesShape(vec![2, 3])
    );
    let error = nms(good.clone(), scores(3), 0.5).unwrap_err();
    assert_eq!(error.to_string(), "scores has 3 values for 2 boxes");
    let inverted = boxes(vec![0.0, 0.0, 2.0, 2.0, 3.0, 1.0, 1.0, 3.0], 2);
    let error = nms(inverted, scores(2), 0.5).unwrap_err().to_string();
    assert!(
        error.contains("boxes[1]") && error.contains("x1 <= x2"),
        "{error}"
    );
    for t in [-0.1, 1.5, f32::NAN] {
        let error = nms(good.clone(), scores(2), t).unwrap_err().to_string();
        assert!(
            error.starts_with("iou_threshold must be in [0, 1]"),
            "{error}"
        );
    }
    let gaussian = SoftNmsConfig {
        method: SoftNmsMethod::Gaussian,
        sigma: 0.0,
        ..SoftNmsConfig::default()
    };
    let error = soft_nms(good.clone(), scores(2), gaussian).unwrap_err();
    assert_eq!(error, NmsError::Sigma(0.0));
    let classes = Tensor::<B, 1, Int>::from_data(TensorData::new(vec![0i64], [1]), &device);
    let error = batched_nms(good, scores(2), classes, 0.5)
        .unwrap_err()
        .to_string();
    assert_eq!(error, "classes has 1 values for 2 boxes");
}

/// On a CubeCL device (lavapipe) the kernels run (their counters rise) and give the fixtures'
/// results: the greedy NMS family and soft-NMS, every case, directly on `Wgpu`.
#[test]
fn the_nms_kernels_match_the_fixtures_on_wgpu() {
    let f = Fixture::open();
    let (masks, softs) = (suppression_mask_launches(), soft_nms_launches());
    greedy_nms_matches_the_fixtures::<Wgpu>(&f);
    batched_nms_matches_the_fixtures::<Wgpu>(&f);
    soft_nms_matches_the_fixtures::<Wgpu>(&f, Order::UpToNearTies);
    assert!(
        suppression_mask_launches() > masks,
        "the IoU mask kernel never ran"
    );
    assert!(soft_nms_launches() > softs, "the soft-NMS kernel never ran");
}

/// burnacc's training stacks (`Acc` over `Autodiff` over `Wgpu`) reach the same kernels.
#[test]
fn the_nms_kernels_run_through_acc_and_autodiff() {
    type Stack = Acc<Autodiff<Wgpu>>;
    let f = Fixture::open();
    let (masks, softs) = (suppression_mask_launches(), soft_nms_launches());
    let (boxes, scores, classes) = f.inputs_on::<Stack>("random");
    let kept = ints(batched_nms(boxes.clone(), scores.clone(), classes.clone(), 0.5).unwrap());
    let expected = by_score_then_index(
        f.ints["random.batched.0.5"].clone(),
        &f.floats["random.scores"].1,
    );
    assert_eq!(kept, expected);
    let out = batched_soft_nms(boxes, scores, classes, SoftNmsConfig::default()).unwrap();
    assert_soft(
        "random",
        "batched_soft.linear",
        ints(out.indices),
        floats(out.scores),
        &f,
        Order::Exact,
    );
    assert!(suppression_mask_launches() > masks && soft_nms_launches() > softs);
}

/// Random boxes with integer corners (so that IoUs on the threshold are exact on both sides)
/// and `classes` classes.
fn random_boxes(n: usize, classes: i64, seed: u64) -> (Vec<[f32; 4]>, Vec<f32>, Vec<i64>) {
    let mut rng = StdRng::seed_from_u64(seed);
    let boxes = (0..n)
        .map(|_| {
            let (x, y) = (
                rng.random_range(0..40) as f32,
                rng.random_range(0..40) as f32,
            );
            let (w, h) = (
                rng.random_range(1..12) as f32,
                rng.random_range(1..12) as f32,
            );
            [x, y, x + w, y + h]
        })
        .collect();
    let scores = (0..n)
        .map(|_| rng.random_range(0..8) as f32 / 8.0)
        .collect();
    let classes = (0..n).map(|_| rng.random_range(0..classes)).collect();
    (boxes, scores, classes)
}

/// The device's suppression bitmask equals the host's word for word, at sizes on and off a
/// 32-box word, with and without classes, for both area conventions; and soft-NMS on the
/// device equals the host's for each method, with ties and zero-area boxes.
#[test]
fn the_nms_kernels_equal_the_host_at_odd_sizes() {
    let device = Default::default();
    let cpu = Default::default();
    for (k, n) in [1usize, 2, 31, 32, 33, 97, 300].into_iter().enumerate() {
        for classes in [1, 3] {
            let (boxes, scores, labels) = random_boxes(n, classes, k as u64);
            let flat: Vec<f32> = boxes.iter().flatten().copied().collect();
            let boxes_t = Tensor::<Wgpu, 2>::from_data(TensorData::new(flat, [n, 4]), &device);
            let labels_t =
                Tensor::<Wgpu, 1, Int>::from_data(TensorData::new(labels.clone(), [n]), &device);
            for offset in [0.0, 1.0] {
                let device_mask = <Wgpu as NmsKernel>::nms_suppression_mask(
                    boxes_t.clone().into_primitive().tensor(),
                    labels_t.clone().into_primitive(),
                    0.4,
                    offset,
                );
                let host_mask = reference::suppression_mask_host(&boxes, &labels, 0.4, offset);
                assert_eq!(
                    device_mask, host_mask,
                    "n {n}, {classes} classes, offset {offset}"
                );
            }
            let (members, segments) = reference::group_by_class(&labels);
            let grouped: Vec<f32> = members.iter().flat_map(|&i| boxes[i]).collect();
            let grouped_scores: Vec<f32> = members.iter().map(|&i| scores[i]).collect();
            for method in [
                SoftNmsMethod::Naive,
                SoftNmsMethod::Linear,
                SoftNmsMethod::Gaussian,
            ] {
                let config = SoftNmsConfig {
                    method,
                    min_score: 0.05,
                    ..SoftNmsConfig::default()
                };
                let on_device = <Wgpu as NmsKernel>::soft_nms_segments(
                    Tensor::<Wgpu, 2>::from_data(TensorData::new(grouped.clone(), [n, 4]), &device)
                        .into_primitive()
                        .tensor(),
                    Tensor::<Wgpu, 1>::from_data(
                        TensorData::new(grouped_scores.clone(), [n]),
                        &device,
                    )
                    .into_primitive()
                    .tensor(),
                    &segments,
                    &config,
                );
                // The provided (host) method on Flex is the reference.
                let on_host = B::soft_nms_segments(
                    Tensor::<B, 2>::from_data(TensorData::new(grouped.clone(), [n, 4]), &cpu)
                        .into_primitive()
                        .tensor(),
                    Tensor::<B, 1>::from_data(TensorData::new(grouped_scores.clone(), [n]), &cpu)
                        .into_primitive()
                        .tensor(),
                    &segments,
                    &config,
                );
                let ids = |v: &[(usize, f32)]| v.iter().map(|p| p.0).collect::<Vec<_>>();
                assert_eq!(
                    ids(&on_device),
                    ids(&on_host),
                    "n {n}, {classes} classes, {method:?}"
                );
                for (d, h) in on_device.iter().zip(&on_host) {
                    assert!(close(d.1, h.1), "{d:?} vs {h:?}");
                }
            }
        }
    }
}
