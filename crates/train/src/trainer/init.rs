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
use burnacc_models::bert::ImportReport;
use burnacc_models::pytorch_import::PytorchImportError;
use burnacc_models::swin::{load_timm_swin, load_timm_swin_backbone};
use burnacc_models::{ResNet, ResNetConfig, SwinConfig, SwinTransformer, checkpoint_tensor_shape};
use burnacc_models::{load_torchvision_resnet, load_torchvision_resnet_backbone};
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
            Some(file) => Some(import_checkpoint(
                &mut host,
                file,
                config.num_classes,
                "head.fc.weight",
                load_timm_swin,
                load_timm_swin_backbone,
            )?),
            None => None,
        };
        let model = to_device(host, device, |d| config.init::<B>(d))?;
        Ok((model, summary))
    })
}

/// `config`'s ResNet as [`init_model`] draws it, then overwritten by the torchvision
/// checkpoint `weights` (`model.weights`), if any.
pub fn init_resnet<B: Backend>(
    config: &ResNetConfig,
    seed: u64,
    weights: Option<&Path>,
    device: &B::Device,
) -> Result<(ResNet<B>, Option<PretrainedSummary>)> {
    with_host_rng(|| {
        let mut host: ResNet<Flex> = init_on_host(seed, |d| config.init(d));
        let summary = match weights {
            Some(file) => Some(import_checkpoint(
                &mut host,
                file,
                config.num_classes,
                "fc.weight",
                load_torchvision_resnet,
                load_torchvision_resnet_backbone,
            )?),
            None => None,
        };
        let model = to_device(host, device, |d| config.init::<B>(d))?;
        Ok((model, summary))
    })
}

/// A loader of a PyTorch checkpoint into `M`.
type Loader<M> = fn(&mut M, &Path) -> Result<ImportReport, PytorchImportError>;

/// Loads the PyTorch checkpoint `file` into `model`: with `whole`, classifier included, when
/// the file's classifier weight (`head_weight`, `[classes, features]`) has `num_classes`
/// rows; otherwise with `backbone`, the classifier staying as drawn.
fn import_checkpoint<M>(
    model: &mut M,
    file: &Path,
    num_classes: usize,
    head_weight: &str,
    whole: Loader<M>,
    backbone: Loader<M>,
) -> Result<PretrainedSummary> {
    let head_rows = checkpoint_tensor_shape(file, head_weight)
        .map_err(|why| anyhow::anyhow!("model.weights: cannot read {}: {why}", file.display()))?
        .and_then(|shape| shape.first().copied());
    let load = if head_rows == Some(num_classes) {
        whole
    } else {
        backbone
    };
    let report = load(model, file)
        .with_context(|| format!("model.weights: cannot start from {}", file.display()))?;
    Ok(PretrainedSummary {
        file: file.to_owned(),
        loaded: report.applied,
        fresh: report.missing,
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
