//! Multi-tensor Adam/AdamW and SGD (CubeCL kernels on wgpu/lavapipe, the Fusion custom op,
//! the fused Flex loop) against the plain-Burn reference on `NdArray<f64>`.
//!
//! Groups hold more tensors than one launch takes, of many shapes, so chunking, the
//! grid-stride loop and the per-tensor bias corrections are all exercised. Parameters are
//! compared through their change `p' − p`, which is small next to `p`, so that an error in
//! the update cannot hide behind the parameter's magnitude.

use crate::common::{prim, rel_err, wrap};
use burn::backend::wgpu::{CubeBackend, WgpuRuntime};
use burn::backend::{Flex, NdArray, Wgpu};
use burn::tensor::backend::Backend;
use burn::tensor::ops::FloatTensor;
use burn::tensor::{Tensor, TensorData};
use burnacc_kernels::optim::{
    AdamGroup, AdamHyper, MultiTensorOptim, SgdGroup, SgdHyper, multi_tensor_adam_launches,
    multi_tensor_sgd_launches,
};
use burnacc_tests::tolerance::FUSED_OPTIMIZER_F32;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

type Cube = CubeBackend<WgpuRuntime, f32, i32, u32>;
type Reference = NdArray<f64>;

/// Shapes of one group: 31 tensors (more than one launch's 24), from a scalar-like `[1]` to
/// tensors larger than one sweep of a small grid (and than the CPU loop's parallel task), and
/// an empty one.
fn shapes() -> Vec<Vec<usize>> {
    let mut shapes = vec![
        vec![1],
        vec![7],
        vec![3, 5],
        vec![64, 3, 3, 3],
        vec![1000],
        vec![0],
        vec![17, 19],
        vec![5, 4097],
        vec![256],
        vec![2, 3, 4, 5],
        vec![2, 40_001],
    ];
    for i in 0..20 {
        shapes.push(vec![i * 37 + 1, 3]);
    }
    shapes
}

/// Shapes whose lengths are all multiples of 4 (the first ones of 2 only), so that the CubeCL
/// launches load vectors of 4 (and of 2 in the first chunk) where [`shapes`] loads scalars.
fn vector_shapes() -> Vec<Vec<usize>> {
    let mut shapes = vec![
        vec![2],
        vec![6, 3],
        vec![4],
        vec![64, 3, 3, 4],
        vec![0],
        vec![5, 4096],
        vec![768],
        vec![2, 40_000],
    ];
    for i in 0..24 {
        shapes.push(vec![i * 36 + 4, 4]);
    }
    shapes
}

/// Both groups every check runs, with their seeds.
fn groups(seed: u64) -> [Values; 2] {
    [
        Values::new(seed, shapes()),
        Values::new(seed + 100, vector_shapes()),
    ]
}

/// Host values of one group's tensors and per-tensor step counts.
struct Values {
    shapes: Vec<Vec<usize>>,
    params: Vec<Vec<f32>>,
    grads: Vec<Vec<f32>>,
    state1: Vec<Vec<f32>>,
    state2: Vec<Vec<f32>>,
    /// Step count each parameter reaches with this step (1 = its first).
    steps: Vec<u32>,
}

impl Values {
    fn new(seed: u64, shapes: Vec<Vec<usize>>) -> Self {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut fill = |lo: f32, hi: f32| -> Vec<Vec<f32>> {
            shapes
                .iter()
                .map(|s| {
                    (0..s.iter().product::<usize>())
                        .map(|_| rng.random_range(lo..hi))
                        .collect()
                })
                .collect()
        };
        let params = fill(-1.0, 1.0);
        let grads = fill(-0.1, 0.1);
        let state1 = fill(-0.05, 0.05);
        // Second moments are non-negative.
        let state2 = fill(0.0, 0.01);
        let steps = (0..shapes.len()).map(|i| 1 + (i as u32 * 7) % 11).collect();
        Self {
            shapes,
            params,
            grads,
            state1,
            state2,
            steps,
        }
    }
}

fn tensors<B: Backend>(shapes: &[Vec<usize>], values: &[Vec<f32>]) -> Vec<FloatTensor<B>> {
    let device = B::Device::default();
    shapes
        .iter()
        .zip(values)
        .map(|(shape, v)| {
            let data = TensorData::new(v.clone(), shape.clone()).convert::<B::FloatElem>();
            B::float_from_data(data, &device)
        })
        .collect()
}

/// An f32 `[len]` tensor, whatever the backend's float type.
fn vector<B: Backend>(values: Vec<f32>) -> FloatTensor<B> {
    let len = values.len();
    B::float_from_data(TensorData::new(values, [len]), &B::Device::default())
}

fn data<B: Backend>(tensors: Vec<FloatTensor<B>>) -> Vec<TensorData> {
    tensors
        .into_iter()
        .map(|t| {
            use burn::tensor::TensorMetadata;
            let numel = t.shape().num_elements();
            wrap::<B, 1>(B::float_reshape(t, [numel].into())).into_data()
        })
        .collect()
}

/// `(p', m', v')` per tensor.
type AdamResult = (Moved, Vec<TensorData>, Vec<TensorData>);

fn adam<B: MultiTensorOptim>(
    values: &Values,
    hyper: AdamHyper,
    found_inf: Option<f32>,
) -> AdamResult {
    let shapes = &values.shapes;
    let (beta1, beta2) = (hyper.beta1, hyper.beta2);
    let step_size = values
        .steps
        .iter()
        .map(|&t| (hyper.lr / (1.0 - beta1.powi(t as i32))) as f32)
        .collect();
    let bc2_sqrt = values
        .steps
        .iter()
        .map(|&t| (1.0 - beta2.powi(t as i32)).sqrt() as f32)
        .collect();
    let group = AdamGroup::<B> {
        params: tensors::<B>(shapes, &values.params),
        grads: tensors::<B>(shapes, &values.grads),
        exp_avg: tensors::<B>(shapes, &values.state1),
        exp_avg_sq: tensors::<B>(shapes, &values.state2),
        step_size: vector::<B>(step_size),
        bc2_sqrt: vector::<B>(bc2_sqrt),
    };
    let found_inf = found_inf.map(|f| vector::<B>(vec![f]));
    let update = B::multi_tensor_adam(group, hyper, found_inf);
    (
        changes(&values.params, data::<B>(update.params)),
        data::<B>(update.exp_avg),
        data::<B>(update.exp_avg_sq),
    )
}

/// The new parameters, with the values before the step to judge them by.
struct Moved {
    before: Vec<Vec<f32>>,
    after: Vec<TensorData>,
}

fn changes(before: &[Vec<f32>], after: Vec<TensorData>) -> Moved {
    Moved {
        before: before.to_vec(),
        after,
    }
}

/// The largest error of the new parameters, relative to the size of the reference's update:
/// `max (|p'−p'ref| − 2⁻²⁰·|p|)⁺ / max |p'ref − p|` per tensor. `p'` is f32, so it carries
/// rounding errors of a few ulps of `p` (its own rounding, `p·(1 − lr·wd)`, and the device's
/// division and square root, which Vulkan allows 2.5 ulps): 8 ulps of `p` are allowed for,
/// since an update far smaller than `p` cannot be checked to better than that.
fn update_err(actual: &Moved, expected: &Moved) -> f64 {
    let rounding = 2f64.powi(-20);
    let mut worst: f64 = 0.0;
    for ((before, a), e) in actual.before.iter().zip(&actual.after).zip(&expected.after) {
        let (a, e): (Vec<f64>, Vec<f64>) = (a.iter::<f64>().collect(), e.iter::<f64>().collect());
        let scale = e
            .iter()
            .zip(before)
            .map(|(e, &p)| (e - f64::from(p)).abs())
            .fold(0.0, f64::max);
        if scale == 0.0 {
            continue;
        }
        let err = a
            .iter()
            .zip(&e)
            .zip(before)
            .map(|((a, e), &p)| ((a - e).abs() - rounding * f64::from(p).abs()).max(0.0))
            .fold(0.0, f64::max);
        worst = worst.max(err / scale);
    }
    worst
}

/// Whether each new parameter equals its old value exactly.
fn unmoved(moved: &Moved) -> bool {
    moved
        .before
        .iter()
        .zip(&moved.after)
        .all(|(p, a)| a.to_vec::<f32>().unwrap() == *p)
}

/// The largest relative error over the tensors of two results.
fn worst(actual: &[TensorData], expected: &[TensorData]) -> f64 {
    assert_eq!(actual.len(), expected.len());
    actual
        .iter()
        .zip(expected)
        .filter(|(_, e)| e.num_elements() > 0)
        .map(|(a, e)| rel_err(a.clone(), e.clone()))
        .fold(0.0, f64::max)
}

fn adam_hypers() -> [AdamHyper; 3] {
    let adamw = AdamHyper {
        lr: 1e-3,
        beta1: 0.9,
        beta2: 0.999,
        eps: 1e-8,
        weight_decay: 1e-2,
        decoupled: true,
    };
    [
        adamw,
        AdamHyper {
            weight_decay: 0.1,
            decoupled: false,
            lr: 3e-2,
            ..adamw
        },
        AdamHyper {
            weight_decay: 0.0,
            beta1: 0.5,
            beta2: 0.9,
            eps: 1e-6,
            ..adamw
        },
    ]
}

fn check_adam<B: MultiTensorOptim>(backend: &str, tolerance: f64) {
    for values in groups(7) {
        check_adam_group::<B>(backend, tolerance, &values);
    }
}

fn check_adam_group<B: MultiTensorOptim>(backend: &str, tolerance: f64, values: &Values) {
    for hyper in adam_hypers() {
        for found_inf in [None, Some(0.0)] {
            let (dp, m, v) = adam::<B>(values, hyper, found_inf);
            let (dp_ref, m_ref, v_ref) = adam::<Reference>(values, hyper, found_inf);
            let errors = [
                update_err(&dp, &dp_ref),
                worst(&m, &m_ref),
                worst(&v, &v_ref),
            ];
            println!(
                "{backend} {hyper:?} found_inf {found_inf:?}: p' - p, m', v' errors {errors:?}"
            );
            for (name, err) in ["p' - p", "m'", "v'"].into_iter().zip(errors) {
                assert!(
                    err <= tolerance,
                    "{backend} {hyper:?}: {name} off by {err:e}"
                );
            }
        }
    }
}

/// A skipped step (found_inf = 1) returns every input bit for bit.
fn check_adam_skip<B: MultiTensorOptim>() {
    for values in groups(11) {
        check_adam_skip_group::<B>(&values);
    }
}

fn check_adam_skip_group<B: MultiTensorOptim>(values: &Values) {
    let (dp, m, v) = adam::<B>(values, adam_hypers()[0], Some(1.0));
    assert!(unmoved(&dp), "a parameter moved on a skipped step");
    for (i, (m, v)) in m.iter().zip(&v).enumerate() {
        assert_eq!(
            m.to_vec::<f32>().unwrap(),
            values.state1[i],
            "tensor {i}: exp_avg changed"
        );
        assert_eq!(
            v.to_vec::<f32>().unwrap(),
            values.state2[i],
            "tensor {i}: exp_avg_sq changed"
        );
    }
}

/// `(p', buf')` per tensor.
type SgdResult = (Moved, Vec<TensorData>);

fn sgd<B: MultiTensorOptim>(values: &Values, hyper: SgdHyper, found_inf: Option<f32>) -> SgdResult {
    let shapes = &values.shapes;
    let momentum = hyper.momentum != 0.0;
    // Every third tensor starts its buffer at this step.
    let first = (0..shapes.len())
        .map(|i| if i % 3 == 0 { 1.0 } else { 0.0 })
        .collect();
    let group = SgdGroup::<B> {
        params: tensors::<B>(shapes, &values.params),
        grads: tensors::<B>(shapes, &values.grads),
        momentum_buffer: if momentum {
            tensors::<B>(shapes, &values.state1)
        } else {
            Vec::new()
        },
        first: momentum.then(|| vector::<B>(first)),
    };
    let update = B::multi_tensor_sgd(group, hyper, found_inf.map(|f| vector::<B>(vec![f])));
    (
        changes(&values.params, data::<B>(update.params)),
        data::<B>(update.momentum_buffer),
    )
}

fn sgd_hypers() -> [SgdHyper; 4] {
    let plain = SgdHyper {
        lr: 0.1,
        momentum: 0.0,
        dampening: 0.0,
        weight_decay: 0.0,
        nesterov: false,
    };
    [
        plain,
        SgdHyper {
            weight_decay: 1e-4,
            ..plain
        },
        SgdHyper {
            momentum: 0.9,
            weight_decay: 5e-4,
            ..plain
        },
        SgdHyper {
            momentum: 0.9,
            nesterov: true,
            weight_decay: 1e-4,
            ..plain
        },
    ]
}

fn check_sgd<B: MultiTensorOptim>(backend: &str, tolerance: f64) {
    for values in groups(13) {
        check_sgd_group::<B>(backend, tolerance, &values);
    }
}

fn check_sgd_group<B: MultiTensorOptim>(backend: &str, tolerance: f64, values: &Values) {
    let dampened = SgdHyper {
        momentum: 0.8,
        dampening: 0.3,
        lr: 0.05,
        weight_decay: 0.0,
        nesterov: false,
    };
    for hyper in sgd_hypers().into_iter().chain([dampened]) {
        for found_inf in [None, Some(0.0)] {
            let (dp, buf) = sgd::<B>(values, hyper, found_inf);
            let (dp_ref, buf_ref) = sgd::<Reference>(values, hyper, found_inf);
            assert_eq!(buf.len(), buf_ref.len());
            let errors = [update_err(&dp, &dp_ref), worst(&buf, &buf_ref)];
            println!("{backend} {hyper:?} found_inf {found_inf:?}: p' - p, buf' errors {errors:?}");
            for (name, err) in ["p' - p", "buf'"].into_iter().zip(errors) {
                assert!(
                    err <= tolerance,
                    "{backend} {hyper:?}: {name} off by {err:e}"
                );
            }
        }
    }
    let (dp, buf) = sgd::<B>(values, sgd_hypers()[2], Some(1.0));
    assert!(unmoved(&dp), "a parameter moved on a skipped step");
    for (i, buf) in buf.iter().enumerate() {
        assert_eq!(
            buf.to_vec::<f32>().unwrap(),
            values.state1[i],
            "tensor {i}: buffer changed"
        );
    }
}

#[test]
fn cube_adam_matches_reference_and_launches_in_chunks() {
    let before = multi_tensor_adam_launches();
    check_adam::<Cube>("CubeBackend<wgpu>", FUSED_OPTIMIZER_F32);
    check_adam_skip::<Cube>();
    // 6 + 6 steps of 31 and 32 tensors: at least 2 launches each.
    let launches = multi_tensor_adam_launches() - before;
    assert!(
        launches >= 24,
        "expected at least 24 fused launches, counted {launches}"
    );
}

#[test]
fn cube_sgd_matches_reference() {
    let before = multi_tensor_sgd_launches();
    check_sgd::<Cube>("CubeBackend<wgpu>", FUSED_OPTIMIZER_F32);
    assert!(
        multi_tensor_sgd_launches() > before,
        "the fused SGD did not launch"
    );
}

#[test]
fn fusion_custom_op_matches_reference() {
    let (adam_before, sgd_before) = (multi_tensor_adam_launches(), multi_tensor_sgd_launches());
    check_adam::<Wgpu>("Fusion<wgpu>", FUSED_OPTIMIZER_F32);
    check_adam_skip::<Wgpu>();
    check_sgd::<Wgpu>("Fusion<wgpu>", FUSED_OPTIMIZER_F32);
    assert!(
        multi_tensor_adam_launches() > adam_before,
        "the fused Adam did not launch"
    );
    assert!(
        multi_tensor_sgd_launches() > sgd_before,
        "the fused SGD did not launch"
    );
}

#[test]
fn flex_loop_matches_reference() {
    let (adam_before, sgd_before) = (multi_tensor_adam_launches(), multi_tensor_sgd_launches());
    check_adam::<Flex>("Flex", FUSED_OPTIMIZER_F32);
    check_adam_skip::<Flex>();
    check_sgd::<Flex>("Flex", FUSED_OPTIMIZER_F32);
    assert!(
        multi_tensor_adam_launches() > adam_before,
        "the fused Adam loop did not run"
    );
    assert!(
        multi_tensor_sgd_launches() > sgd_before,
        "the fused SGD loop did not run"
    );
}

/// The Flex loop writes in place only into buffers nobody else holds: a parameter the caller
/// still references keeps its value.
#[test]
fn flex_loop_leaves_shared_tensors_alone() {
    let device = Default::default();
    let param = Tensor::<Flex, 1>::from_floats([1.0, 2.0, 3.0], &device);
    let kept = param.clone();
    let group = SgdGroup::<Flex> {
        params: vec![prim(param)],
        grads: vec![prim(Tensor::<Flex, 1>::from_floats(
            [1.0, 1.0, 1.0],
            &device,
        ))],
        momentum_buffer: Vec::new(),
        first: None,
    };
    let hyper = SgdHyper {
        lr: 0.5,
        momentum: 0.0,
        dampening: 0.0,
        weight_decay: 0.0,
        nesterov: false,
    };
    let update = Flex::multi_tensor_sgd(group, hyper, None);
    let new: Tensor<Flex, 1> = wrap(update.params.into_iter().next().unwrap());
    assert_eq!(
        new.into_data().to_vec::<f32>().unwrap(),
        vec![0.5, 1.5, 2.5]
    );
    assert_eq!(
        kept.into_data().to_vec::<f32>().unwrap(),
        vec![1.0, 2.0, 3.0]
    );
}

/// f16 groups on the CubeCL kernels (master weights in half precision), to f16's precision.
#[test]
fn cube_adam_f16_matches_reference() {
    for values in groups(5) {
        check_adam_f16_group(values);
    }
}

fn check_adam_f16_group(values: Values) {
    let hyper = adam_hypers()[0];
    let half = |v: &[Vec<f32>]| -> Vec<Vec<f32>> {
        v.iter()
            .map(|t| {
                t.iter()
                    .map(|&x| burn::tensor::f16::from_f32(x).to_f32())
                    .collect()
            })
            .collect()
    };
    let values = Values {
        params: half(&values.params),
        grads: half(&values.grads),
        state1: half(&values.state1),
        state2: half(&values.state2),
        ..values
    };
    let (_, m, v) =
        adam::<CubeBackend<WgpuRuntime, burn::tensor::f16, i32, u32>>(&values, hyper, None);
    let (_, m_ref, v_ref) = adam::<Reference>(&values, hyper, None);
    let errors = [worst(&m, &m_ref), worst(&v, &v_ref)];
    println!("f16 m', v' errors {errors:?}");
    assert!(errors.iter().all(|&e| e <= 2e-3), "f16 errors {errors:?}");
}
