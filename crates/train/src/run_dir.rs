//! Run folders and atomic writes: a run never overwrites an earlier run's files, and a file is
//! either absent or complete (written to a temporary name in the same folder, then renamed).

use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

/// Creates and returns the first free `root/run-N` folder (N = 1, 2, ...).
pub fn fresh_run_dir(root: &Path) -> Result<PathBuf> {
    std::fs::create_dir_all(root).with_context(|| format!("cannot create {}", root.display()))?;
    for n in 1.. {
        let dir = root.join(format!("run-{n}"));
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e).with_context(|| format!("cannot create {}", dir.display())),
        }
    }
    unreachable!("the run counter is unbounded")
}

/// Writes `bytes` to `path` atomically (temporary file in the same folder, then rename).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = temp_path(path);
    std::fs::write(&tmp, bytes).with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, path)
        .with_context(|| format!("cannot rename {} to {}", tmp.display(), path.display()))
}

/// A temporary name next to `path`: `.<name>.tmp`.
pub fn temp_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.tmp"))
}
