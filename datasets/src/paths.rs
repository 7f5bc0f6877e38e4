//! Default on-disk locations for cached and downloaded data.
//!
//! | what | default |
//! | --- | --- |
//! | generated data (mock ImageNet) | `$BURNACC_CACHE`, else `~/.cache/burnacc` |
//! | downloaded data (Fashion-MNIST) | `$BURNACC_DATA`, else `~/.cache/burnacc` |
//!
//! `~` is `$HOME`; without it the system temporary folder is used.

use std::path::PathBuf;

/// Environment variable overriding the folder of generated data.
pub const CACHE_ENV: &str = "BURNACC_CACHE";
/// Environment variable overriding the folder of downloaded data.
pub const DATA_ENV: &str = "BURNACC_DATA";

/// `~/.cache/burnacc`.
fn home_cache() -> PathBuf {
    match std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        Some(home) => PathBuf::from(home).join(".cache").join("burnacc"),
        None => std::env::temp_dir().join("burnacc"),
    }
}

fn env_dir(var: &str) -> Option<PathBuf> {
    std::env::var_os(var)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// Folder for generated data: `$BURNACC_CACHE`, else `~/.cache/burnacc`.
pub fn cache_dir() -> PathBuf {
    env_dir(CACHE_ENV).unwrap_or_else(home_cache)
}

/// Folder for downloaded data sets: `$BURNACC_DATA`, else `~/.cache/burnacc`.
pub fn data_dir() -> PathBuf {
    env_dir(DATA_ENV).unwrap_or_else(home_cache)
}
