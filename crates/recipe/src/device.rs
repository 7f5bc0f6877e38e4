//! `[backend] mode` and `device`: which stack of DESIGN.md §2 runs the recipe.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Which backend stack trains the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Plain Burn: one kernel per op (`Autodiff<CubeBackend<R>>`, or `Autodiff<Flex>` on the CPU).
    Eager,
    /// Burn's own fusion (`Autodiff<Fusion<CubeBackend<R>>>`); needs a CubeCL device.
    Fused,
    /// burnacc: `Autodiff<Acc<Fusion<CubeBackend<R>>>>`, or `Autodiff<Acc<Flex>>` on the CPU.
    Acc,
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Mode::Eager => "eager",
            Mode::Fused => "fused",
            Mode::Acc => "acc",
        })
    }
}

/// The device a recipe asks for: `auto`, `cpu`, `wgpu`, `cuda` or `cuda:N`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum DeviceSpec {
    /// CUDA when built with it and a GPU is present, else the CPU (wgpu for `fused`).
    Auto,
    /// The CPU, through the Flex backend.
    Cpu,
    /// The default wgpu adapter (Vulkan or Metal; Mesa lavapipe on CPU-only machines).
    Wgpu,
    /// CUDA device with this index (`cuda` is `cuda:0`).
    Cuda(usize),
}

impl TryFrom<String> for DeviceSpec {
    type Error = String;

    fn try_from(s: String) -> Result<Self, String> {
        let bad = || format!("unknown device `{s}`; expected auto, cpu, wgpu, cuda or cuda:N");
        match s.as_str() {
            "auto" => Ok(DeviceSpec::Auto),
            "cpu" => Ok(DeviceSpec::Cpu),
            "wgpu" => Ok(DeviceSpec::Wgpu),
            "cuda" => Ok(DeviceSpec::Cuda(0)),
            other => match other.strip_prefix("cuda:") {
                Some(index) => index.parse().map(DeviceSpec::Cuda).map_err(|_| bad()),
                None => Err(bad()),
            },
        }
    }
}

impl From<DeviceSpec> for String {
    fn from(d: DeviceSpec) -> String {
        d.to_string()
    }
}

impl fmt::Display for DeviceSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeviceSpec::Auto => f.write_str("auto"),
            DeviceSpec::Cpu => f.write_str("cpu"),
            DeviceSpec::Wgpu => f.write_str("wgpu"),
            DeviceSpec::Cuda(i) => write!(f, "cuda:{i}"),
        }
    }
}
