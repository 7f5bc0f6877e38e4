//! The device dropout seed of the fused bias + dropout + residual add: the seed drawn by the
//! backend's generator ([`dropout_seed`]) and read by the kernels on the device gives the host
//! mask of the same seed words, bit for bit, on the CubeCL kernels (wgpu, directly and through
//! fusion) and on the CPU reference path; consecutive draws differ; re-seeding the backend
//! replays the same draws (what gradient checkpointing relies on). Plus the host seed type.
//!
//! The backends' generators are process-wide, so every test that draws holds [`RNG`]: another
//! test's draw between a `B::seed` and a draw would break the replay.

use std::sync::Mutex;

use burn::backend::wgpu::{CubeBackend, WgpuDevice, WgpuRuntime};
use burn::backend::{Flex, NdArray};
use burn::tensor::backend::Backend;
use burn::tensor::{Int, Tensor, TensorData};
use burnacc_kernels::bias_dropout_add::seed::SEED_WORD_LIMIT;
use burnacc_kernels::bias_dropout_add::{
    BiasDropoutAddKernel, DropoutSeed, bias_dropout_add, bias_dropout_add_backward_launches,
    bias_dropout_add_device_seed, bias_dropout_add_forward_launches, bias_dropout_add_reference,
    dropout_keep_mask, dropout_seed,
};

type Wgpu = burn::backend::Wgpu;
type Cube = CubeBackend<WgpuRuntime, f32, i32, u32>;
type Ref = NdArray<f64>;

use crate::common::{prim, rel_err, wrap};

/// Held by every test that draws from a backend generator.
static RNG: Mutex<()> = Mutex::new(());

fn rng_lock() -> std::sync::MutexGuard<'static, ()> {
    RNG.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Mismatches between the mask applied in `values` (kept = `scale`, dropped = 0) and `host`.
fn mask_mismatches(values: &[f32], host: &[bool], scale: f32) -> usize {
    assert_eq!(values.len(), host.len());
    values
        .iter()
        .zip(host)
        .filter(|&(&v, &keep)| v != if keep { scale } else { 0.0 })
        .count()
}

/// On a CubeCL backend (`Cube`, or `Wgpu` = fusion over it): for seeds drawn on the device,
/// the masks of the forward (`x = 1`, `residual = 0`) and of both backward kernels (`dy = 1`,
/// without and with a bias) equal the host mask of the seed read back, bit for bit, and the
/// launch counters increase.
fn check_device_seed_masks<B: BiasDropoutAddKernel>(name: &str, device: &B::Device) {
    let dims = [129usize, 257usize]; // 33 153 elements, odd sizes
    let ones = Tensor::<B, 2>::ones(dims, device);
    let zeros = Tensor::<B, 2>::zeros(dims, device);
    for p in [0.1, 0.5, 0.9] {
        let seed = dropout_seed::<B>(device);
        let (forward_before, backward_before) = (
            bias_dropout_add_forward_launches(),
            bias_dropout_add_backward_launches(),
        );
        let y = bias_dropout_add_device_seed(ones.clone(), None, zeros.clone(), p, seed.clone());
        let (dx, _) = B::fused_bias_dropout_add_backward(
            prim(ones.clone()),
            p,
            Some(seed.clone().into_primitive()),
            false,
        );
        let (dx_columns, _) = B::fused_bias_dropout_add_backward(
            prim(ones.clone()),
            p,
            Some(seed.clone().into_primitive()),
            true,
        );
        let outputs = [
            ("forward", y.into_data()),
            ("backward dx", wrap::<B, 2>(dx).into_data()),
            ("backward dx + dbias", wrap::<B, 2>(dx_columns).into_data()),
        ];
        assert!(bias_dropout_add_forward_launches() > forward_before);
        assert!(bias_dropout_add_backward_launches() > backward_before);

        // Read back only now, after the kernels consumed the seed on the device.
        let host_seed = DropoutSeed::from_tensor(seed);
        let host = dropout_keep_mask(host_seed, p, &dims);
        let scale = (1.0 / (1.0 - p)) as f32;
        for (what, data) in outputs {
            let values: Vec<f32> = data.to_vec().unwrap();
            let mismatches = mask_mismatches(&values, &host, scale);
            assert_eq!(
                mismatches, 0,
                "{name} {what}, p {p}, seed {host_seed:?}: mask differs"
            );
        }
        let kept = host.iter().filter(|&&k| k).count() as f64 / host.len() as f64;
        println!("{name} p {p}: seed {host_seed:?}, kept {kept:.4}");
        let sigma = (p * (1.0 - p) / host.len() as f64).sqrt();
        assert!(
            (kept - (1.0 - p)).abs() <= 5.0 * sigma,
            "kept fraction {kept}"
        );
    }
}

#[test]
fn device_seed_mask_equals_host_mask_cube() {
    let _rng = rng_lock();
    check_device_seed_masks::<Cube>("cube", &WgpuDevice::default());
}

#[test]
fn device_seed_mask_equals_host_mask_fusion() {
    let _rng = rng_lock();
    check_device_seed_masks::<Wgpu>("wgpu (fusion)", &WgpuDevice::default());
}

/// The CPU reference path with a device seed tensor (NdArray: i64 ints; Flex: i32) equals the
/// reference with the host seed read back, exactly, forward and backward.
fn check_reference_device_seed<B: BiasDropoutAddKernel>(name: &str, device: &B::Device) {
    let dims = [7usize, 33usize];
    let numel = dims[0] * dims[1];
    let values = |offset: usize| -> Vec<f32> {
        (0..numel)
            .map(|i| ((i * 37 + offset) % 101) as f32 / 50.0 - 1.0)
            .collect()
    };
    let tensor = |v: Vec<f32>| Tensor::<B, 2>::from_data(TensorData::new(v, dims.to_vec()), device);
    let (x, residual, grad) = (tensor(values(0)), tensor(values(5)), tensor(values(11)));
    let bias = Tensor::<B, 1>::from_data(TensorData::new(values(3)[..33].to_vec(), [33]), device);
    let p = 0.3;
    let seed = dropout_seed::<B>(device);
    let host_seed = DropoutSeed::from_tensor(seed.clone());

    let y = bias_dropout_add_device_seed(
        x.clone(),
        Some(bias.clone()),
        residual.clone(),
        p,
        seed.clone(),
    );
    let expected = bias_dropout_add_reference(x, Some(bias), residual, p, host_seed);
    let err = rel_err(y.into_data(), expected.into_data());
    assert!(
        err == 0.0,
        "{name}: forward differs from the host-seed reference ({err:e})"
    );

    let (dx, _) = B::fused_bias_dropout_add_backward(
        prim(grad.clone()),
        p,
        Some(seed.into_primitive()),
        false,
    );
    let host = dropout_keep_mask(host_seed, p, &dims);
    let keep = Tensor::<B, 2, burn::tensor::Bool>::from_data(TensorData::new(host, dims), device);
    let expected = grad
        .mul_scalar(1.0 / (1.0 - p))
        .mask_fill(keep.bool_not(), 0.0);
    let err = rel_err(wrap::<B, 2>(dx).into_data(), expected.into_data());
    assert!(
        err == 0.0,
        "{name}: dx differs from the host-seed mask ({err:e})"
    );
}

#[test]
fn device_seed_reference_path_matches_host_seed() {
    let _rng = rng_lock();
    check_reference_device_seed::<Ref>("ndarray", &Default::default());
    check_reference_device_seed::<Flex>("flex", &Default::default());
}

/// Draws on `B`: two draws in a row differ, and after re-seeding the backend with the same
/// value the same draws come again in the same order (the checkpoint replay); another seed
/// value gives other draws. All words lie in `[0, 2³¹)` (checked by `from_tensor`).
fn check_draws<B: Backend>(name: &str, device: &B::Device) {
    let draw = || dropout_seed::<B>(device);
    B::seed(device, 2024);
    let (a, b) = (draw(), draw());
    B::seed(device, 2024);
    let (c, d) = (draw(), draw());
    B::seed(device, 2025);
    let e = draw();
    let read = |t: Tensor<B, 1, Int>| DropoutSeed::from_tensor(t);
    let dtype = a.dtype();
    let [a, b, c, d, e] = [a, b, c, d, e].map(read);
    println!("{name} ({dtype:?}): {a:?} {b:?} | replay {c:?} {d:?} | other {e:?}");
    assert_ne!(a, b, "{name}: two draws in a row are equal");
    assert_eq!(
        (a, b),
        (c, d),
        "{name}: re-seeding does not replay the draws"
    );
    assert_ne!(a, e, "{name}: another backend seed gives the same draw");

    // Distinct seeds give independent masks: they agree on about half of the elements at p = ½.
    let dims = [20_000usize];
    let (ma, mb) = (
        dropout_keep_mask(a, 0.5, &dims),
        dropout_keep_mask(b, 0.5, &dims),
    );
    let agree = ma.iter().zip(&mb).filter(|(x, y)| x == y).count() as f64 / dims[0] as f64;
    assert!((agree - 0.5).abs() < 0.02, "{name}: masks agree on {agree}");
}

#[test]
fn drawn_seeds_differ_and_replay() {
    let _rng = rng_lock();
    let device = WgpuDevice::default();
    check_draws::<Wgpu>("wgpu (fusion)", &device);
    check_draws::<Cube>("cube", &device);
    check_draws::<Ref>("ndarray", &Default::default());
    check_draws::<Flex>("flex", &Default::default());
}

/// A host `u64` seed and its [`DropoutSeed`] tensor drop the same elements on the kernels.
#[test]
fn host_seed_is_the_device_seed_of_its_words() {
    let device = WgpuDevice::default();
    let dims = [31usize, 67usize];
    let ones = Tensor::<Cube, 2>::ones(dims, &device);
    let zeros = Tensor::<Cube, 2>::zeros(dims, &device);
    let (p, seed) = (0.4, 0xfeed_f00d_1234_5678u64);
    let y_host = bias_dropout_add(ones.clone(), None, zeros.clone(), p, seed);
    let tensor = DropoutSeed::from_u64(seed).to_tensor::<Cube>(&device);
    let y_device = bias_dropout_add_device_seed(ones, None, zeros, p, tensor);
    let (y_host, y_device): (Vec<f32>, Vec<f32>) = (
        y_host.into_data().to_vec().unwrap(),
        y_device.into_data().to_vec().unwrap(),
    );
    assert_eq!(y_host, y_device);
    let host = dropout_keep_mask(seed, p, &dims);
    assert_eq!(mask_mismatches(&y_host, &host, (1.0 / (1.0 - p)) as f32), 0);
}

/// The host seed type: 31-bit words; a u64 maps through a bijective mixer, so seeds that
/// differ only in their top bits (which the words cannot hold) still differ; round trips
/// through tensors of each int dtype.
#[test]
fn dropout_seed_words() {
    let seeds = [0u64, 1, 1 << 62, 1 << 63, 3 << 62, u64::MAX, 0xffff_ffff];
    let words: Vec<[u32; 2]> = seeds
        .iter()
        .map(|&s| DropoutSeed::from_u64(s).words())
        .collect();
    for (i, w) in words.iter().enumerate() {
        assert!(w.iter().all(|&x| x < SEED_WORD_LIMIT), "{w:?}");
        for v in &words[i + 1..] {
            assert_ne!(w, v, "two u64 seeds map to the same words");
        }
    }
    assert_eq!(DropoutSeed::from(42u64), DropoutSeed::from_u64(42));

    let seed = DropoutSeed::from_words([SEED_WORD_LIMIT - 1, 12_345]);
    for data in [
        TensorData::new(vec![SEED_WORD_LIMIT as i64 - 1, 12_345], [2]),
        TensorData::new(vec![(SEED_WORD_LIMIT - 1) as i32, 12_345], [2]),
        TensorData::new(vec![SEED_WORD_LIMIT - 1, 12_345u32], [2]),
    ] {
        assert_eq!(DropoutSeed::from_data(&data), seed);
    }
    let device = WgpuDevice::default();
    assert_eq!(
        DropoutSeed::from_tensor(seed.to_tensor::<Cube>(&device)),
        seed
    );
    assert_eq!(
        DropoutSeed::from_tensor(seed.to_tensor::<Ref>(&Default::default())),
        seed
    );
    assert_eq!(
        DropoutSeed::from_tensor(seed.to_tensor::<Flex>(&Default::default())),
        seed
    );
}

#[test]
#[should_panic(expected = "must lie in [0, 2^31)")]
fn dropout_seed_rejects_32_bit_words() {
    DropoutSeed::from_words([SEED_WORD_LIMIT, 0]);
}

#[test]
#[should_panic(expected = "must lie in [0, 2^31)")]
fn dropout_seed_rejects_negative_values() {
    DropoutSeed::from_data(&TensorData::new(vec![-1i32, 0], [2]));
}
