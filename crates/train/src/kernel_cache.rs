//! Where CubeCL keeps what it learns during the first steps, so later runs start warm.
//!
//! The first training steps on a CubeCL device compile every kernel (NVRTC on CUDA, naga on
//! wgpu) and autotune matmul, convolution and fused kernels by timing candidates. CubeCL can keep
//! both on disk, but by default it keeps autotune results in the `target/` folder of the Cargo
//! project around the working directory (elsewhere, in `~/.cache/cubecl`) and keeps no compiled
//! kernels at all. burnacc points both at one folder under its own cache,
//! `$BURNACC_KERNEL_CACHE`, else `$BURNACC_CACHE/cubecl` (default `~/.cache/burnacc/cubecl`):
//! autotune results, and compiled
//! CUDA kernels (PTX). A `cubecl.toml` (or a `[cubecl]` section in `burn.toml`) in the working
//! directory or above is the user's own configuration and is left as it is.

use burn::cubecl::config::cache::CacheConfig;
use burn::cubecl::config::{CubeClRuntimeConfig, RuntimeConfig};
use std::path::{Path, PathBuf};

/// What [`configure_kernel_caches`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KernelCaches {
    /// Autotune results and compiled kernels are kept in this folder.
    Burnacc(PathBuf),
    /// The user's CubeCL configuration file decides.
    UserConfig(PathBuf),
    /// CubeCL's configuration was already in use in this process; nothing changed.
    AlreadySet,
}

impl std::fmt::Display for KernelCaches {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KernelCaches::Burnacc(dir) => write!(
                f,
                "autotune results and compiled kernels kept in {}",
                dir.display()
            ),
            KernelCaches::UserConfig(file) => {
                write!(f, "CubeCL configured by {}", file.display())
            }
            KernelCaches::AlreadySet => write!(f, "CubeCL already configured in this process"),
        }
    }
}

/// The CubeCL configuration file that applies in `dir` (CubeCL's own search: the folder and
/// its parents, `cubecl.toml`, `CubeCL.toml`, or `burn.toml` / `Burn.toml` with `[cubecl]`).
pub fn user_cubecl_config(dir: &Path) -> Option<PathBuf> {
    dir.ancestors().find_map(|d| {
        let own = ["cubecl.toml", "CubeCL.toml"].map(|n| d.join(n));
        let burn = ["burn.toml", "Burn.toml"].map(|n| d.join(n));
        own.into_iter().find(|p| p.is_file()).or_else(|| {
            burn.into_iter().find(|p| {
                std::fs::read_to_string(p)
                    .ok()
                    .and_then(|t| t.parse::<toml::Table>().ok())
                    .is_some_and(|t| t.contains_key("cubecl"))
            })
        })
    })
}

/// Environment variable naming the folder of CubeCL's caches.
pub const KERNEL_CACHE_ENV: &str = "BURNACC_KERNEL_CACHE";

/// The folder burnacc keeps CubeCL's caches in: `$BURNACC_KERNEL_CACHE`, else
/// `$BURNACC_CACHE/cubecl` (`~/.cache/burnacc/cubecl`).
pub fn kernel_cache_dir() -> PathBuf {
    std::env::var_os(KERNEL_CACHE_ENV)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| burnacc_datasets::paths::cache_dir().join("cubecl"))
}

/// Points CubeCL's autotune and compilation caches at [`kernel_cache_dir`], unless a CubeCL
/// configuration file applies. CubeCL's environment variables (`CUBECL_AUTOTUNE_LEVEL`,
/// `CUBECL_DEBUG_LOG`, …) still apply. Call it before the first device is used.
pub fn configure_kernel_caches() -> KernelCaches {
    configure_cubecl(|_| {})
}

/// [`configure_kernel_caches`], then `adjust` applied to the configuration CubeCL will use:
/// burnacc's caches, or the user's file read the way CubeCL reads it (its folder and parents,
/// then the environment). With [`KernelCaches::AlreadySet`] nothing changed, `adjust`
/// included.
pub fn configure_cubecl(adjust: impl FnOnce(&mut CubeClRuntimeConfig)) -> KernelCaches {
    let (mut config, caches) = match std::env::current_dir()
        .ok()
        .and_then(|d| user_cubecl_config(&d))
    {
        Some(file) => (
            CubeClRuntimeConfig::from_current_dir().override_from_env(),
            KernelCaches::UserConfig(file),
        ),
        None => {
            let dir = kernel_cache_dir();
            let mut config = CubeClRuntimeConfig::default().override_from_env();
            config.autotune.cache = CacheConfig::File(dir.clone());
            config.compilation.cache = Some(CacheConfig::File(dir.clone()));
            (config, KernelCaches::Burnacc(dir))
        }
    };
    adjust(&mut config);
    // Checked and set under one lock: another thread may read the configuration at any time
    // (CubeCL reads it when a device starts), and `RuntimeConfig::set` panics once it has.
    let mut state = CubeClRuntimeConfig::storage().lock();
    if state.is_some() {
        return KernelCaches::AlreadySet;
    }
    *state = Some(std::sync::Arc::new(config));
    caches
}
