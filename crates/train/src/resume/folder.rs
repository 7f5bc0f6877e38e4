//! Checkpoint folders on disk: `<run>/checkpoints/step-<S>/`, written so that a crash at any
//! moment (even `kill -9` or a power cut) leaves either the whole checkpoint or one that is
//! never taken for whole.
//!
//! A checkpoint is written into `.step-<S>.partial/` (every file `fsync`ed), its manifest
//! `state.json` (each file's size and SHA-256) last among the files, the folder `fsync`ed and
//! renamed to `step-<S>`, the parent `fsync`ed, and only then the marker `COMPLETE` written
//! (to a temporary name, `fsync`, rename, `fsync` of the folder). A folder without the marker,
//! or whose files do not match the manifest, is refused when loaded and skipped when looking
//! for the latest checkpoint.

use super::manifest::{FileDigest, Manifest};
use anyhow::{Context, Result, bail};
use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The marker written last.
pub const MARKER: &str = "COMPLETE";
/// The manifest's file name.
pub const MANIFEST: &str = "state.json";
/// The folder of a run's checkpoints.
pub const CHECKPOINTS: &str = "checkpoints";

/// `checkpoints/step-<step>` of `run_dir`.
pub fn checkpoint_dir(run_dir: &Path, step: usize) -> PathBuf {
    run_dir.join(CHECKPOINTS).join(format!("step-{step}"))
}

/// Writes a checkpoint of `files` (name → bytes) and `manifest` (its `files` filled in here)
/// at `step` under `run_dir`, replacing an earlier checkpoint of the same step, then keeps only
/// the newest `keep_last` complete checkpoints (0: all). Returns the checkpoint's folder.
pub fn write_checkpoint(
    run_dir: &Path,
    step: usize,
    files: Vec<(&'static str, Vec<u8>)>,
    mut manifest: Manifest,
    keep_last: usize,
) -> Result<PathBuf> {
    let parent = run_dir.join(CHECKPOINTS);
    std::fs::create_dir_all(&parent)
        .with_context(|| format!("cannot create {}", parent.display()))?;
    remove_partials(&parent)?;
    let partial = parent.join(format!(".step-{step}.partial"));
    std::fs::create_dir(&partial)
        .with_context(|| format!("cannot create {}", partial.display()))?;
    manifest.files = BTreeMap::new();
    for (name, bytes) in &files {
        write_synced(&partial.join(name), bytes)?;
        manifest
            .files
            .insert((*name).to_owned(), FileDigest::of(bytes));
    }
    let json = serde_json::to_vec_pretty(&manifest).context("cannot serialise state.json")?;
    write_synced(&partial.join(MANIFEST), &json)?;
    sync_dir(&partial)?;

    let dir = checkpoint_dir(run_dir, step);
    if dir.exists() {
        // An earlier run of these steps (resumed from an older checkpoint): its folder loses
        // its marker first, so it is never whole and half removed.
        remove_marker(&dir)?;
        std::fs::remove_dir_all(&dir)
            .with_context(|| format!("cannot replace {}", dir.display()))?;
    }
    std::fs::rename(&partial, &dir)
        .with_context(|| format!("cannot rename {} to {}", partial.display(), dir.display()))?;
    sync_dir(&parent)?;
    let marker_tmp = dir.join(format!(".{MARKER}.tmp"));
    write_synced(&marker_tmp, format!("step {step}\n").as_bytes())?;
    std::fs::rename(&marker_tmp, dir.join(MARKER))
        .with_context(|| format!("cannot write the marker of {}", dir.display()))?;
    sync_dir(&dir)?;
    prune(&parent, keep_last)?;
    Ok(dir)
}

/// The complete checkpoints under `run_dir`, oldest first, as `(step, folder)`.
pub fn complete_checkpoints(run_dir: &Path) -> Result<Vec<(usize, PathBuf)>> {
    let parent = run_dir.join(CHECKPOINTS);
    let mut found = Vec::new();
    let entries = match std::fs::read_dir(&parent) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(found),
        Err(e) => return Err(e).with_context(|| format!("cannot list {}", parent.display())),
    };
    for entry in entries {
        let path = entry
            .with_context(|| format!("cannot list {}", parent.display()))?
            .path();
        let step = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_prefix("step-"))
            .and_then(|s| s.parse::<usize>().ok());
        if let Some(step) = step
            && path.join(MARKER).is_file()
        {
            found.push((step, path));
        }
    }
    found.sort();
    Ok(found)
}

/// A checkpoint's manifest and files, each checked against the manifest's size and SHA-256.
/// Errors name the folder and the file.
pub fn read_checkpoint(dir: &Path) -> Result<(Manifest, BTreeMap<String, Vec<u8>>)> {
    if !dir.join(MARKER).is_file() {
        bail!(
            "{} is not a complete checkpoint: its marker `{MARKER}` is missing (the run stopped \
             while writing it, or it is not a checkpoint folder)",
            dir.display()
        );
    }
    let manifest_path = dir.join(MANIFEST);
    let text = std::fs::read(&manifest_path)
        .with_context(|| format!("cannot read {}", manifest_path.display()))?;
    let manifest: Manifest = serde_json::from_slice(&text)
        .with_context(|| format!("{} is not a checkpoint manifest", manifest_path.display()))?;
    manifest.check_format(&manifest_path)?;
    let mut files = BTreeMap::new();
    for (name, digest) in &manifest.files {
        let path = dir.join(name);
        let bytes =
            std::fs::read(&path).with_context(|| format!("cannot read {}", path.display()))?;
        let found = FileDigest::of(&bytes);
        if found != *digest {
            bail!(
                "{} is corrupt: {} bytes with SHA-256 {}, but {} records {} bytes with SHA-256 {}",
                path.display(),
                found.bytes,
                found.sha256,
                manifest_path.display(),
                digest.bytes,
                digest.sha256
            );
        }
        files.insert(name.clone(), bytes);
    }
    Ok((manifest, files))
}

/// Keeps the newest `keep_last` complete checkpoints in `parent` (0: all).
fn prune(parent: &Path, keep_last: usize) -> Result<()> {
    if keep_last == 0 {
        return Ok(());
    }
    let run_dir = parent.parent().expect("checkpoints has a parent");
    let complete = complete_checkpoints(run_dir)?;
    let surplus = complete.len().saturating_sub(keep_last);
    for (_, dir) in &complete[..surplus] {
        remove_marker(dir)?;
        std::fs::remove_dir_all(dir).with_context(|| format!("cannot remove {}", dir.display()))?;
    }
    Ok(())
}

/// Removes what a stopped run left half written.
fn remove_partials(parent: &Path) -> Result<()> {
    for entry in
        std::fs::read_dir(parent).with_context(|| format!("cannot list {}", parent.display()))?
    {
        let path = entry?.path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        if name.starts_with(".step-") && name.ends_with(".partial") {
            std::fs::remove_dir_all(&path)
                .with_context(|| format!("cannot remove {}", path.display()))?;
        }
    }
    Ok(())
}

fn remove_marker(dir: &Path) -> Result<()> {
    match std::fs::remove_file(dir.join(MARKER)) {
        Ok(()) => sync_dir(dir),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e).with_context(|| format!("cannot remove the marker of {}", dir.display())),
    }
}

/// Creates `path` with `bytes` and flushes it to the disk.
fn write_synced(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut file =
        File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .with_context(|| format!("cannot write {}", path.display()))
}

/// Flushes a folder's entries (new names, renames) to the disk.
fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .with_context(|| format!("cannot sync the folder {}", dir.display()))
}
