//! The fused bias + dropout + residual add through Burn's fusion backend
//! (`burn::backend::Wgpu`, i.e. `Fusion<CubeBackend<WgpuRuntime, f32, i32, u32>>`) and under
//! `Autodiff`: gradients from `.backward()` against the same maths written with Burn ops and
//! the host mask, on `NdArray<f64>`.
//!
//! With a device seed ([`dropout_seed`]) the expected values use the host mask of the seed
//! read back after the step; re-seeding the backend replays the same masks.
//!
//! Fusion runs operations lazily: every result is read (`into_data`) before the launch
//! counters are checked. Run with `--nocapture` to see the measured errors.

use burn::backend::wgpu::{CubeBackend, WgpuDevice, WgpuRuntime};
use burn::backend::{Autodiff, NdArray};
use burn::tensor::backend::Backend;
use burn::tensor::{Tensor, TensorData};
use burnacc_kernels::bias_dropout_add::{
    BiasDropoutAddKernel, DropoutSeed, bias_dropout_add, bias_dropout_add_backward_launches,
    bias_dropout_add_device_seed, bias_dropout_add_forward_launches, bias_dropout_add_inference,
    dropout_keep_mask_tensor, dropout_seed,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The default `burn::backend::Wgpu`: `Fusion<CubeBackend<WgpuRuntime, f32, i32, u32>>`.
type Wgpu = burn::backend::Wgpu;
type Cube = CubeBackend<WgpuRuntime, f32, i32, u32>;
type Ref = NdArray<f64>;

use burnacc_tests::tolerance::{FUSED_F32_FORWARD, FUSED_F32_GRADIENT};

use crate::common::{prim, rel_err, wrap};

fn values(n: usize, seed: u64) -> Vec<f32> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..n).map(|_| rng.random_range(-1.0..1.0)).collect()
}

fn tensor<B: Backend, const D: usize>(
    v: &[f32],
    dims: [usize; D],
    device: &B::Device,
) -> Tensor<B, D> {
    Tensor::from_data(TensorData::new(v.to_vec(), dims), device)
}

/// Inputs `x`, `bias`, `residual` and the loss weight `w` (`loss = Σ y · w`, so `dy = w`).
struct Case<const D: usize> {
    dims: [usize; D],
    x: Vec<f32>,
    bias: Vec<f32>,
    residual: Vec<f32>,
    w: Vec<f32>,
}

impl<const D: usize> Case<D> {
    fn new(dims: [usize; D], seed: u64) -> Self {
        let numel = dims.iter().product();
        Self {
            dims,
            x: values(numel, seed),
            bias: values(dims[D - 1], seed + 1),
            residual: values(numel, seed + 2),
            w: values(numel, seed + 3),
        }
    }

    /// `[y, dx, d_residual, dbias]` written with plain Burn ops on `NdArray<f64>` and the host
    /// mask: `y = residual + (x + bias) · keep / (1 − p)`, `dx = w · keep / (1 − p)`,
    /// `d_residual = w`, `dbias = Σ_rows dx`.
    fn expected(&self, with_bias: bool, p: f64, seed: impl Into<DropoutSeed>) -> [TensorData; 4] {
        let cpu = Default::default();
        let x = tensor::<Ref, D>(&self.x, self.dims, &cpu);
        let residual = tensor::<Ref, D>(&self.residual, self.dims, &cpu);
        let w = tensor::<Ref, D>(&self.w, self.dims, &cpu);
        let bias = tensor::<Ref, 1>(&self.bias, [self.dims[D - 1]], &cpu);
        let keep = dropout_keep_mask_tensor::<Ref, D>(seed, p, self.dims, &cpu).float();
        let scale = 1.0 / (1.0 - p);
        let v = if with_bias {
            x + bias.unsqueeze::<D>()
        } else {
            x
        };
        let y = residual + v * keep.clone() * scale;
        let dx = w.clone() * keep * scale;
        let width = self.dims[D - 1];
        let dbias = dx
            .clone()
            .reshape([dx.shape().num_elements() / width, width])
            .sum_dim(0)
            .reshape([width]);
        [
            y.into_data(),
            dx.into_data(),
            w.into_data(),
            dbias.into_data(),
        ]
    }

    /// `[y, dx, d_residual, dbias]` from `.backward()` on `Autodiff<B>` through
    /// [`bias_dropout_add`] (`dbias` empty without a bias). With `p = 0` it goes through the
    /// inference entry point.
    fn autodiff<B: BiasDropoutAddKernel>(
        &self,
        with_bias: bool,
        p: f64,
        seed: u64,
        device: &B::Device,
    ) -> [TensorData; 4] {
        self.autodiff_with::<B>(with_bias, device, |x, b, residual| {
            if p == 0.0 {
                bias_dropout_add_inference(x, b, residual)
            } else {
                bias_dropout_add(x, b, residual, p, seed)
            }
        })
    }

    /// `[y, dx, d_residual, dbias]` from `.backward()` on `Autodiff<B>` of `forward(x, bias,
    /// residual)`, all three tracked (`dbias` empty without a bias).
    fn autodiff_with<B: BiasDropoutAddKernel>(
        &self,
        with_bias: bool,
        device: &B::Device,
        forward: impl FnOnce(
            Tensor<Autodiff<B>, D>,
            Option<Tensor<Autodiff<B>, 1>>,
            Tensor<Autodiff<B>, D>,
        ) -> Tensor<Autodiff<B>, D>,
    ) -> [TensorData; 4] {
        type Ad<B> = Autodiff<B>;
        let x = tensor::<Ad<B>, D>(&self.x, self.dims, device).require_grad();
        let residual = tensor::<Ad<B>, D>(&self.residual, self.dims, device).require_grad();
        let bias = tensor::<Ad<B>, 1>(&self.bias, [self.dims[D - 1]], device).require_grad();
        let w = tensor::<Ad<B>, D>(&self.w, self.dims, device);
        let b = with_bias.then(|| bias.clone());
        let y = forward(x.clone(), b, residual.clone());
        let grads = (y.clone() * w).sum().backward();
        let dbias = if with_bias {
            bias.grad(&grads).expect("bias is tracked").into_data()
        } else {
            assert!(
                bias.grad(&grads).is_none(),
                "an unused bias has no gradient"
            );
            TensorData::new(Vec::<f32>::new(), [0])
        };
        [
            y.into_data(),
            x.grad(&grads).expect("x is tracked").into_data(),
            residual
                .grad(&grads)
                .expect("residual is tracked")
                .into_data(),
            dbias,
        ]
    }
}

/// Compares `[y, dx, d_residual, dbias]` with the expected values and returns the errors.
fn compare(what: &str, actual: [TensorData; 4], expected: [TensorData; 4]) -> [f64; 4] {
    let mut errs = [0.0; 4];
    for (i, (a, e)) in actual.into_iter().zip(expected).enumerate() {
        if i == 3 && a.num_elements() == 0 {
            continue; // no bias
        }
        errs[i] = rel_err(a, e);
    }
    println!(
        "{what}: y {:.2e}, dx {:.2e}, d_residual {:.2e}, dbias {:.2e}",
        errs[0], errs[1], errs[2], errs[3]
    );
    assert!(
        errs[0] <= FUSED_F32_FORWARD,
        "{what}: y error {:e}",
        errs[0]
    );
    assert!(
        errs[1] <= FUSED_F32_FORWARD,
        "{what}: dx error {:e}",
        errs[1]
    );
    assert!(
        errs[2] == 0.0,
        "{what}: d_residual is dy itself, error {:e}",
        errs[2]
    );
    assert!(
        errs[3] <= FUSED_F32_GRADIENT,
        "{what}: dbias error {:e}",
        errs[3]
    );
    errs
}

/// `Autodiff<B>` gradients against the expected maths, with both launch counters increased.
fn check_autodiff<B: BiasDropoutAddKernel, const D: usize>(
    name: &str,
    dims: [usize; D],
    with_bias: bool,
    p: f64,
    seed: u64,
    device: &B::Device,
) {
    let case = Case::new(dims, seed);
    let (forward_before, backward_before) = (
        bias_dropout_add_forward_launches(),
        bias_dropout_add_backward_launches(),
    );
    let actual = case.autodiff::<B>(with_bias, p, seed, device);
    assert!(
        bias_dropout_add_forward_launches() > forward_before,
        "{name}: the fused forward did not launch"
    );
    if with_bias || p > 0.0 {
        assert!(
            bias_dropout_add_backward_launches() > backward_before,
            "{name}: the fused backward did not launch"
        );
    }
    let what = format!("{name} {dims:?} p {p} bias {with_bias}");
    compare(&what, actual, case.expected(with_bias, p, seed));
}

#[test]
fn autodiff_fusion_matches_burn_ops() {
    let device = WgpuDevice::default();
    check_autodiff::<Wgpu, 3>("autodiff<wgpu>", [2, 3, 1024], true, 0.1, 7, &device);
    check_autodiff::<Wgpu, 2>("autodiff<wgpu>", [4097, 7], true, 0.5, 8, &device);
    check_autodiff::<Wgpu, 2>("autodiff<wgpu>", [5, 1023], false, 0.3, 9, &device);
    check_autodiff::<Wgpu, 2>("autodiff<wgpu>", [3, 768], true, 0.0, 10, &device);
    check_autodiff::<Wgpu, 2>("autodiff<wgpu>", [3, 768], false, 0.0, 11, &device);
}

#[test]
fn autodiff_cube_matches_burn_ops() {
    let device = WgpuDevice::default();
    check_autodiff::<Cube, 3>("autodiff<cube>", [2, 3, 1024], true, 0.5, 21, &device);
    check_autodiff::<Cube, 2>("autodiff<cube>", [1, 7], false, 0.1, 22, &device);
    check_autodiff::<Cube, 2>("autodiff<cube>", [3, 768], true, 0.0, 23, &device);
}

/// On the f64 CPU reference the node's backward is the reference backward; it must agree
/// with Burn's own autodiff of the decomposed maths (`add`, mask, `mul`, `add`).
#[test]
fn autodiff_node_matches_decomposed_autodiff() {
    let (p, seed) = (0.2, 31);
    let case = Case::new([6, 13], 30);
    let cpu = Default::default();
    for with_bias in [true, false] {
        let fused = case.autodiff::<Ref>(with_bias, p, seed, &cpu);

        type Ad = Autodiff<Ref>;
        let x = tensor::<Ad, 2>(&case.x, case.dims, &cpu).require_grad();
        let residual = tensor::<Ad, 2>(&case.residual, case.dims, &cpu).require_grad();
        let bias = tensor::<Ad, 1>(&case.bias, [13], &cpu).require_grad();
        let keep = dropout_keep_mask_tensor::<Ad, 2>(seed, p, case.dims, &cpu).float();
        let v = if with_bias {
            x.clone() + bias.clone().unsqueeze::<2>()
        } else {
            x.clone()
        };
        let y = residual.clone() + v * keep * (1.0 / (1.0 - p));
        let grads = (y.clone() * tensor::<Ad, 2>(&case.w, case.dims, &cpu))
            .sum()
            .backward();
        let dbias = match bias.grad(&grads) {
            Some(dbias) => dbias.into_data(),
            None => TensorData::new(Vec::<f64>::new(), [0]),
        };
        let decomposed = [
            y.into_data(),
            x.grad(&grads).unwrap().into_data(),
            residual.grad(&grads).unwrap().into_data(),
            dbias,
        ];
        for (name, (a, e)) in ["y", "dx", "d_residual", "dbias"]
            .iter()
            .zip(fused.into_iter().zip(decomposed))
        {
            if a.num_elements() == 0 && e.num_elements() == 0 {
                continue;
            }
            let err = rel_err(a, e);
            assert!(
                err <= 1e-12,
                "{name}: fused node vs decomposed autodiff {err:e}"
            );
        }
    }
}

/// Only some inputs tracked: the node registers gradients for those alone, and skips the
/// kernel when only the residual needs one.
#[test]
fn autodiff_partially_tracked_inputs() {
    type Ad = Autodiff<Cube>;
    let (p, seed) = (0.5, 41);
    let case = Case::new([4, 96], 40);
    let device = WgpuDevice::default();
    let [_, dx, dres, dbias] = case.expected(true, p, seed);

    // Only the bias is tracked.
    let x = tensor::<Ad, 2>(&case.x, case.dims, &device);
    let residual = tensor::<Ad, 2>(&case.residual, case.dims, &device);
    let bias = tensor::<Ad, 1>(&case.bias, [96], &device).require_grad();
    let w = tensor::<Ad, 2>(&case.w, case.dims, &device);
    let y = bias_dropout_add(x, Some(bias.clone()), residual, p, seed);
    let grads = (y * w.clone()).sum().backward();
    let err = rel_err(bias.grad(&grads).unwrap().into_data(), dbias);
    assert!(err <= FUSED_F32_GRADIENT, "bias-only dbias error {err:e}");

    // Only x and the residual are tracked; the bias is a constant.
    let x = tensor::<Ad, 2>(&case.x, case.dims, &device).require_grad();
    let residual = tensor::<Ad, 2>(&case.residual, case.dims, &device).require_grad();
    let bias = tensor::<Ad, 1>(&case.bias, [96], &device);
    let y = bias_dropout_add(x.clone(), Some(bias), residual.clone(), p, seed);
    let grads = (y * w.clone()).sum().backward();
    let err = rel_err(x.grad(&grads).unwrap().into_data(), dx);
    assert!(err <= FUSED_F32_FORWARD, "dx error {err:e}");
    let err = rel_err(residual.grad(&grads).unwrap().into_data(), dres.clone());
    assert!(err == 0.0, "d_residual error {err:e}");

    // Only the residual is tracked: its gradient is dy, with no backward kernel needed.
    let x = tensor::<Ad, 2>(&case.x, case.dims, &device);
    let residual = tensor::<Ad, 2>(&case.residual, case.dims, &device).require_grad();
    let y = bias_dropout_add(x, None, residual.clone(), p, seed);
    let grads = (y * w).sum().backward();
    let err = rel_err(residual.grad(&grads).unwrap().into_data(), dres);
    assert!(err == 0.0, "residual-only d_residual error {err:e}");
}

/// The trait methods on `Wgpu` (fusion custom ops), forward and backward, against the
/// expected maths; both counters increase once the results are read.
#[test]
fn fusion_trait_methods_match_burn_ops() {
    let device = WgpuDevice::default();
    for (dims, with_bias, p, seed) in [
        ([3usize, 768usize], true, 0.1, 51u64),
        ([33, 130], false, 0.5, 52),
        ([4097, 7], true, 0.25, 53),
    ] {
        let case = Case::new(dims, seed);
        let x = tensor::<Wgpu, 2>(&case.x, dims, &device);
        let residual = tensor::<Wgpu, 2>(&case.residual, dims, &device);
        let bias = tensor::<Wgpu, 1>(&case.bias, [dims[1]], &device);
        let w = tensor::<Wgpu, 2>(&case.w, dims, &device);
        let (forward_before, backward_before) = (
            bias_dropout_add_forward_launches(),
            bias_dropout_add_backward_launches(),
        );
        let seed_tensor = || {
            Some(
                DropoutSeed::from_u64(seed)
                    .to_tensor::<Wgpu>(&device)
                    .into_primitive(),
            )
        };
        let y = Wgpu::fused_bias_dropout_add(
            prim(x),
            with_bias.then(|| prim(bias)),
            prim(residual),
            p,
            seed_tensor(),
        );
        let (dx, dbias) =
            Wgpu::fused_bias_dropout_add_backward(prim(w.clone()), p, seed_tensor(), with_bias);
        assert_eq!(dbias.is_some(), with_bias);
        // Reading the results executes the recorded operations.
        let actual = [
            wrap::<Wgpu, 2>(y).into_data(),
            wrap::<Wgpu, 2>(dx).into_data(),
            w.into_data(),
            match dbias {
                Some(dbias) => wrap::<Wgpu, 1>(dbias).into_data(),
                None => TensorData::new(Vec::<f32>::new(), [0]),
            },
        ];
        assert!(bias_dropout_add_forward_launches() > forward_before);
        assert!(bias_dropout_add_backward_launches() > backward_before);
        let what = format!("fusion {dims:?} p {p} bias {with_bias}");
        compare(&what, actual, case.expected(with_bias, p, seed));
    }
}

/// The custom operation sits between fusable element-wise ops: its inputs come from pending
/// fused ops and its output feeds another, so stream ordering matters.
#[test]
fn fusion_between_element_wise_ops() {
    let (dims, p, seed) = ([9usize, 130usize], 0.3, 61);
    let case = Case::new(dims, 60);
    let device = WgpuDevice::default();
    let x = tensor::<Wgpu, 2>(&case.x, dims, &device);
    let residual = tensor::<Wgpu, 2>(&case.residual, dims, &device);
    let bias = tensor::<Wgpu, 1>(&case.bias, [130], &device);
    let before = bias_dropout_add_forward_launches();
    let y = bias_dropout_add(x * 2.0 - 1.0, Some(bias * 0.5), residual.exp(), p, seed) * 3.0 + 0.5;
    let y = y.into_data();
    assert!(bias_dropout_add_forward_launches() > before);

    let cpu = Default::default();
    let keep = dropout_keep_mask_tensor::<Ref, 2>(seed, p, dims, &cpu).float();
    let rx = tensor::<Ref, 2>(&case.x, dims, &cpu) * 2.0 - 1.0;
    let rbias = tensor::<Ref, 1>(&case.bias, [130], &cpu) * 0.5;
    let rresidual = tensor::<Ref, 2>(&case.residual, dims, &cpu).exp();
    let expected =
        (rresidual + (rx + rbias.unsqueeze::<2>()) * keep * (1.0 / (1.0 - p))) * 3.0 + 0.5;
    let err = rel_err(y, expected.into_data());
    println!("fusion [9, 130] between element-wise ops: y {err:.2e}");
    assert!(err <= FUSED_F32_FORWARD, "forward error {err:e}");
}

/// Held by the tests that draw from the backend generator (process-wide), so that no other
/// draw slips between a `B::seed` and the draws it should determine.
static RNG: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn rng_lock() -> std::sync::MutexGuard<'static, ()> {
    RNG.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A training step on `Autodiff<B>` with the seed drawn on the device: `[y, dx, d_residual,
/// dbias]` and the seed, read back only after the step.
fn device_seed_step<B: BiasDropoutAddKernel, const D: usize>(
    case: &Case<D>,
    with_bias: bool,
    p: f64,
    device: &B::Device,
) -> ([TensorData; 4], DropoutSeed) {
    let seed = dropout_seed::<Autodiff<B>>(device);
    let kept = seed.clone();
    let actual = case.autodiff_with::<B>(with_bias, device, |x, b, residual| {
        bias_dropout_add_device_seed(x, b, residual, p, seed)
    });
    (actual, DropoutSeed::from_tensor(kept))
}

/// Forward and backward through `Autodiff<Wgpu>` (and `Autodiff<Cube>`) with a device seed:
/// equal to the maths with the host mask of that seed, both kernels launched.
#[test]
fn autodiff_device_seed_matches_burn_ops() {
    let _rng = rng_lock();
    let device = WgpuDevice::default();
    for (dims, with_bias, p, inputs) in [
        ([4usize, 3usize, 256usize], true, 0.1, 71u64),
        ([2, 5, 1023], false, 0.5, 72),
    ] {
        let case = Case::new(dims, inputs);
        let (forward_before, backward_before) = (
            bias_dropout_add_forward_launches(),
            bias_dropout_add_backward_launches(),
        );
        let (actual, seed) = device_seed_step::<Wgpu, 3>(&case, with_bias, p, &device);
        assert!(bias_dropout_add_forward_launches() > forward_before);
        assert!(bias_dropout_add_backward_launches() > backward_before);
        let what = format!("autodiff<wgpu> device seed {seed:?} {dims:?} p {p} bias {with_bias}");
        compare(&what, actual, case.expected(with_bias, p, seed));
    }
    let case = Case::new([33, 130], 73);
    let before = bias_dropout_add_backward_launches();
    let (actual, seed) = device_seed_step::<Cube, 2>(&case, true, 0.25, &device);
    assert!(bias_dropout_add_backward_launches() > before);
    let what = format!("autodiff<cube> device seed {seed:?} [33, 130] p 0.25 bias true");
    compare(&what, actual, case.expected(true, 0.25, seed));
}

/// Gradient checkpointing's replay: after `B::seed(device, s)` a step draws the same seed, so
/// its forward (as recomputed) and its gradients are bitwise those of the first run; a step
/// without re-seeding draws a fresh seed and drops other elements.
#[test]
fn autodiff_device_seed_replays_after_reseeding() {
    type Ad = Autodiff<Wgpu>;
    let _rng = rng_lock();
    let device = WgpuDevice::default();
    let case = Case::new([6, 257], 80);
    let p = 0.5;
    <Ad as Backend>::seed(&device, 1234);
    let (first, seed_first) = device_seed_step::<Wgpu, 2>(&case, true, p, &device);
    let (fresh, seed_fresh) = device_seed_step::<Wgpu, 2>(&case, true, p, &device);
    <Ad as Backend>::seed(&device, 1234);
    let (replay, seed_replay) = device_seed_step::<Wgpu, 2>(&case, true, p, &device);
    println!("first {seed_first:?}, fresh {seed_fresh:?}, replay {seed_replay:?}");

    assert_eq!(
        seed_first, seed_replay,
        "re-seeding did not replay the seed"
    );
    assert_ne!(seed_first, seed_fresh, "two steps drew the same seed");
    for (name, (a, b)) in ["y", "dx", "d_residual", "dbias"]
        .iter()
        .zip(first.clone().into_iter().zip(replay))
    {
        let (a, b): (Vec<f32>, Vec<f32>) = (a.to_vec().unwrap(), b.to_vec().unwrap());
        assert!(a == b, "{name}: the replayed step differs from the first");
    }
    let (a, b): (Vec<f32>, Vec<f32>) = (first[1].to_vec().unwrap(), fresh[1].to_vec().unwrap());
    let differ = a.iter().zip(&b).filter(|(x, y)| x != y).count();
    assert!(
        differ > a.len() / 4,
        "a fresh seed changed only {differ} of {} dx values",
        a.len()
    );
    compare("replayed step", first, case.expected(true, p, seed_first));
}
