//! Model initialisation that does not depend on the device.
//!
//! Each Burn backend has its own random generator, so `B::seed(s)` followed by `init` gives
//! different weights on Flex, wgpu and CUDA. PyTorch users expect a seed to fix the weights
//! whatever the device, and comparing modes and devices needs identical starting points: the
//! weights are drawn on the CPU (Flex) and copied to the device.

use anyhow::{Context, Result};
use burn::backend::Flex;
use burn::backend::flex::FlexDevice;
use burn::module::Module;
use burn::record::{BinBytesRecorder, FullPrecisionSettings, Recorder};
use burn::tensor::backend::Backend;
use burnacc_models::{ResNet, ResNetConfig};

/// `config`'s network with weights drawn on the CPU from `seed`, placed on `device` (f32).
pub fn init_model<B: Backend>(
    config: &ResNetConfig,
    seed: u64,
    device: &B::Device,
) -> Result<ResNet<B>> {
    <Flex as Backend>::seed(&FlexDevice, seed);
    let host: ResNet<Flex> = config.init(&FlexDevice);
    let recorder = BinBytesRecorder::<FullPrecisionSettings>::default();
    let bytes = Recorder::<Flex>::record(&recorder, host.into_record(), ())
        .context("cannot serialise the initial weights")?;
    let record = Recorder::<B>::load(&recorder, bytes, device)
        .context("cannot load the initial weights on the device")?;
    Ok(config.init::<B>(device).load_record(record))
}
