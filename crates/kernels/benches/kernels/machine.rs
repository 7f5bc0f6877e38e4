//! One line naming the device a run measured.

/// The wgpu adapter (name, API, driver). Registers the client of `device` with Burn's default
/// runtime options, so call it before any tensor is made on `device`.
pub fn wgpu(device: &burn::backend::wgpu::WgpuDevice) -> String {
    use burn::backend::wgpu::graphics::AutoGraphicsApi;
    use burn::backend::wgpu::{RuntimeOptions, init_setup};
    let setup = init_setup::<AutoGraphicsApi>(device, RuntimeOptions::default());
    let info = setup.adapter.get_info();
    format!(
        "wgpu {:?} on {} ({:?}; driver {} {}); host {}",
        info.backend,
        info.name,
        info.device_type,
        info.driver,
        info.driver_info,
        host()
    )
}

/// The CPU as Flex uses it.
pub fn cpu() -> String {
    format!("cpu, Flex; {}", host())
}

/// The NVIDIA GPU as the driver names it (`/proc/driver/nvidia`), else the CUDA device index.
#[cfg(feature = "cuda")]
pub fn cuda() -> String {
    let model = std::fs::read_dir("/proc/driver/nvidia/gpus")
        .ok()
        .and_then(|mut gpus| gpus.next())
        .and_then(|gpu| gpu.ok())
        .and_then(|gpu| std::fs::read_to_string(gpu.path().join("information")).ok())
        .and_then(|text| {
            text.lines()
                .find_map(|l| l.strip_prefix("Model:").map(|m| m.trim().to_string()))
        });
    format!(
        "cuda device 0: {}; host {}",
        model.unwrap_or_else(|| "unknown model".into()),
        host()
    )
}

/// CPU model and thread count of this machine.
fn host() -> String {
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|text| {
            text.lines().find_map(|l| {
                l.strip_prefix("model name")
                    .and_then(|rest| rest.split_once(':'))
                    .map(|(_, m)| m.trim().to_string())
            })
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let threads = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!("{model}, {threads} threads")
}
