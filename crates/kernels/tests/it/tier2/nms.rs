//! Tier 2: the NMS family against torchvision and mmcv's semantics.
//!
//! `tests/fixtures/nms.safetensors` (`scripts/record_nms_fixtures.py`) holds five cases
//! (300 random boxes with tied scores and 5 classes, 5000 boxes with 20 classes, one box, no
//! box, six identical boxes) and, for each, torchvision's `nms` and `batched_nms` at IoU 0.3,
//! 0.5 and 0.7, greedy NMS with mmcv's `+1` areas, and mmcv's soft-NMS (naive, linear,
//! Gaussian; per class too) as its CPU kernel computes it in float32.

use std::collections::HashMap;
use std::path::PathBuf;

use burn::backend::Flex;
use burn::tensor::{Int, Tensor, TensorData};
use burnacc_kernels::nms::{
    NmsError, SoftNmsConfig, SoftNmsMethod, batched_nms, batched_soft_nms, nms, nms_normal,
    soft_nms,
};
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

    /// Boxes, scores and classes of `case` on Flex.
    fn inputs(&self, case: &str) -> (Tensor<B, 2>, Tensor<B, 1>, Tensor<B, 1, Int>) {
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

fn ints(t: Tensor<B, 1, Int>) -> Vec<i64> {
    t.into_data().convert::<i64>().to_vec().unwrap()
}

fn floats(t: Tensor<B, 1>) -> Vec<f32> {
    t.into_data().to_vec().unwrap()
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
    let f = Fixture::open();
    for case in CASES {
        for t in THRESHOLDS {
            let threshold: f32 = t.parse().unwrap();
            let (boxes, scores, _) = f.inputs(case);
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
    let (boxes, scores, _) = f.inputs("identical");
    assert_eq!(ints(nms(boxes, scores, 0.99).unwrap()), [0]);
}

#[test]
fn batched_nms_matches_torchvision() {
    let f = Fixture::open();
    for case in CASES {
        let scores_host = &f.floats[&format!("{case}.scores")].1;
        for t in THRESHOLDS {
            let (boxes, scores, classes) = f.inputs(case);
            let got = ints(batched_nms(boxes, scores, classes, t.parse().unwrap()).unwrap());
            // torchvision's per-class path (above 4000 coordinates) leaves the order of equal
            // scores unspecified; ours is by index.
            let expected =
                by_score_then_index(f.ints[&format!("{case}.batched.{t}")].clone(), scores_host);
            assert_eq!(got, expected, "{case} batched_nms {t}");
        }
    }
}

/// Indices exactly; decayed scores within 1e-5 relative: a score decayed by many boxes in turn
/// carries the last-bit differences of each `exp` (Rust's and numpy's `expf`).
fn assert_soft(case: &str, what: &str, indices: Vec<i64>, scores: Vec<f32>, f: &Fixture) {
    assert_eq!(
        indices,
        f.ints[&format!("{case}.{what}.index")],
        "{case} {what}: indices"
    );
    let expected = &f.floats[&format!("{case}.{what}.score")].1;
    for (k, (got, want)) in scores.iter().zip(expected).enumerate() {
        assert!(
            (got - want).abs() <= 1e-5 * want.abs().max(1e-3),
            "{case} {what}: score {k}: {got} vs {want}"
        );
    }
}

#[test]
fn soft_nms_matches_mmcv_for_every_method() {
    let f = Fixture::open();
    let methods = [
        ("naive", SoftNmsMethod::Naive),
        ("linear", SoftNmsMethod::Linear),
        ("gaussian", SoftNmsMethod::Gaussian),
    ];
    for case in CASES {
        for (name, method) in methods {
            let (boxes, scores, _) = f.inputs(case);
            let config = SoftNmsConfig {
                method,
                ..SoftNmsConfig::default()
            };
            let out = soft_nms(boxes.clone(), scores, config).unwrap();
            let indices = ints(out.indices);
            // The kept boxes are the inputs' rows.
            let kept: Vec<f32> = out.boxes.into_data().to_vec().unwrap();
            let all: Vec<f32> = boxes.into_data().to_vec().unwrap();
            for (row, &i) in indices.iter().enumerate() {
                assert_eq!(
                    kept[row * 4..row * 4 + 4],
                    all[i as usize * 4..i as usize * 4 + 4]
                );
            }
            assert_soft(
                case,
                &format!("soft.{name}"),
                indices,
                floats(out.scores),
                &f,
            );
        }
        let (boxes, scores, classes) = f.inputs(case);
        let out = batched_soft_nms(boxes, scores, classes, SoftNmsConfig::default()).unwrap();
        assert_soft(
            case,
            "batched_soft.linear",
            ints(out.indices),
            floats(out.scores),
            &f,
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

/// The same selection from tensors on a CubeCL device (lavapipe): the results come back on it.
#[test]
fn the_nms_family_runs_on_wgpu_tensors() {
    use burn::backend::Wgpu;
    let f = Fixture::open();
    let (boxes, scores, classes) = f.inputs("random");
    let device = Default::default();
    let boxes = Tensor::<Wgpu, 2>::from_data(boxes.into_data(), &device);
    let scores = Tensor::<Wgpu, 1>::from_data(scores.into_data(), &device);
    let classes = Tensor::<Wgpu, 1, Int>::from_data(classes.into_data(), &device);
    let kept = nms(boxes.clone(), scores.clone(), 0.5).unwrap();
    let kept: Vec<i64> = kept.into_data().convert::<i64>().to_vec().unwrap();
    assert_eq!(kept, f.ints["random.nms.0.5"]);
    let out = batched_soft_nms(boxes, scores, classes, SoftNmsConfig::default()).unwrap();
    let indices: Vec<i64> = out.indices.into_data().convert::<i64>().to_vec().unwrap();
    assert_eq!(indices, f.ints["random.batched_soft.linear.index"]);
    assert_eq!(out.boxes.dims(), [indices.len(), 4]);
}
