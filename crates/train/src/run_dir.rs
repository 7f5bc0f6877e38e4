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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_dirs_are_never_reused() {
        let root = tempfile::tempdir().unwrap();
        let a = fresh_run_dir(root.path()).unwrap();
        std::fs::write(a.join("log.jsonl"), "kept").unwrap();
        let b = fresh_run_dir(root.path()).unwrap();
        assert_ne!(a, b);
        assert_eq!(
            std::fs::read_to_string(a.join("log.jsonl")).unwrap(),
            "kept"
        );
    }

    #[test]
    fn atomic_write_leaves_no_temporary() {
        let root = tempfile::tempdir().unwrap();
        let file = root.path().join("summary.json");
        write_atomic(&file, b"{}").unwrap();
        write_atomic(&file, b"{\"a\":1}").unwrap();
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "{\"a\":1}");
        assert_eq!(std::fs::read_dir(root.path()).unwrap().count(), 1);
    }
}
