//! Model initialisation that does not depend on the device.
//!
//! Each Burn backend has its own random generator, so `B::seed(s)` followed by `init` gives
//! different weights on Flex, wgpu and CUDA. PyTorch users expect a seed to fix the weights
//! whatever the device, and comparing modes and devices needs identical starting points: the
//! weights are drawn on the CPU (Flex), imported there when the recipe starts from published
//! weights, and copied to the device.

use super::bert_init::PretrainedSummary;
use anyhow::{Context, Result};
use burn::backend::Flex;
use burn::backend::flex::FlexDevice;
use burn::module::Module;
use burn::record::{BinBytesRecorder, FullPrecisionSettings, Recorder};
use burn::tensor::backend::Backend;
use burnacc_models::swin::{load_timm_swin, load_timm_swin_backbone};
use burnacc_models::{ResNet, ResNetConfig, SwinConfig, SwinTransformer};
use std::path::Path;
use std::sync::Mutex;

/// Flex has one random generator per process. Runs on several threads (tests) would
/// interleave their draws and get other weights than their seed gives, so seeding and
/// initialising hold this lock.
static HOST_RNG: Mutex<()> = Mutex::new(());

/// `f()` with no other initialisation or seeding drawing from Flex's generator meanwhile.
pub fn with_host_rng<T>(f: impl FnOnce() -> T) -> T {
    let _only = HOST_RNG.lock().unwrap_or_else(|e| e.into_inner());
    f()
}

/// `B::seed(device, seed)`, not interleaved with an initialisation on another thread.
pub fn seed_device<B: Backend>(device: &B::Device, seed: u64) {
    with_host_rng(|| B::seed(device, seed));
}

/// `config`'s network with weights drawn on the CPU from `seed`, placed on `device` (f32).
pub fn init_model<B: Backend>(
    config: &ResNetConfig,
    seed: u64,
    device: &B::Device,
) -> Result<ResNet<B>> {
    with_host_rng(|| {
        let host: ResNet<Flex> = init_on_host(seed, |d| config.init(d));
        to_device(host, device, |d| config.init::<B>(d))
    })
}

/// `config`'s Swin Transformer with weights drawn on the CPU from `seed`, placed on `device`
/// (f32).
pub fn init_swin<B: Backend>(
    config: &SwinConfig,
    seed: u64,
    weights: Option<&Path>,
    device: &B::Device,
) -> Result<(SwinTransformer<B>, Option<PretrainedSummary>)> {
    with_host_rng(|| {
        let mut host: SwinTransformer<Flex> = init_on_host(seed, |d| config.init(d));
        let summary = match weights {
            Some(file) => Some(import_swin(&mut host, config, file)?),
            None => None,
        };
        let model = to_device(host, device, |d| config.init::<B>(d))?;
        Ok((model, summary))
    })
}

/// Loads the timm checkpoint `file` into `model`: its classifier too when the file's has
/// `config.num_classes` outputs, otherwise everything else (the head stays as drawn).
fn import_swin(
    model: &mut SwinTransformer<Flex>,
    config: &SwinConfig,
    file: &Path,
) -> Result<PretrainedSummary> {
    let bytes = std::fs::read(file)
        .with_context(|| format!("model.weights: cannot read {}", file.display()))?;
    let (_, header) = safetensors::SafeTensors::read_metadata(&bytes).map_err(|e| {
        anyhow::anyhow!(
            "model.weights: {} is not a safetensors file ({e})",
            file.display()
        )
    })?;
    let head_rows = header
        .tensors()
        .get("head.fc.weight")
        .map(|info| info.shape[0]);
    let whole = head_rows == Some(config.num_classes);
    let report = if whole {
        load_timm_swin(model, file)
    } else {
        load_timm_swin_backbone(model, file)
    }
    .with_context(|| format!("model.weights: cannot start from {}", file.display()))?;
    let fresh = if whole {
        Vec::new()
    } else {
        vec!["head.fc.weight".to_owned(), "head.fc.bias".to_owned()]
    };
    Ok(PretrainedSummary {
        file: file.to_owned(),
        loaded: report.applied,
        fresh,
        unused: report.unused,
    })
}

/// `build(&FlexDevice)` with Flex's generator seeded with `seed`. Call it inside
/// [`with_host_rng`], with the rest of the initialisation.
pub fn init_on_host<M: Module<Flex>>(seed: u64, build: impl FnOnce(&FlexDevice) -> M) -> M {
    <Flex as Backend>::seed(&FlexDevice, seed);
    build(&FlexDevice)
}

/// `build(device)` (the same network on another backend) with `host`'s weights, in f32.
///
/// Burn draws parameters lazily, when first read: `host` is recorded (drawn) before the
/// target is built, so that building it on Flex cannot draw from the generator first.
pub fn to_device<M: Module<Flex>, N: Module<B>, B: Backend>(
    host: M,
    device: &B::Device,
    build: impl FnOnce(&B::Device) -> N,
) -> Result<N> {
    let recorder = BinBytesRecorder::<FullPrecisionSettings>::default();
    let bytes = Recorder::<Flex>::record(&recorder, host.into_record(), ())
        .context("cannot serialise the initial weights")?;
    let record = Recorder::<B>::load(&recorder, bytes, device)
        .context("cannot load the initial weights on the device")?;
    let model = build(device).load_record(record);
    // A lazy backend (Burn's fusion) may still hold queued ops that draw from the generator the
    // host initialisation uses (Flex's, shared by the process): run them now, while the caller
    // holds the host generator, so that they cannot interleave with another thread's draws.
    B::sync(device).context("the device failed while loading the initial weights")?;
    Ok(model)
}
