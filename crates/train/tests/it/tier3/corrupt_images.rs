//! Tier 3: with `data.on_corrupt = "skip"` a run counts each undecodable file once, however
//! many epochs (and the held-out view of the same folder) read it.

use burnacc_datasets::{mock_class_name, mock_file_name};
use burnacc_train::recipe::{DeviceSpec, Mode};
use burnacc_train::stack::Stack;
use burnacc_train::trainer::{RunOptions, run_checked};
use std::path::Path;

use crate::common::tiny_recipe;

#[test]
fn an_undecodable_image_read_in_every_epoch_counts_once() {
    let root = tempfile::tempdir().unwrap();
    let options = RunOptions {
        quiet: true,
        ..Default::default()
    };
    let stack = Stack::new(Mode::Eager, DeviceSpec::Cpu);
    let file = Path::new("corrupt.toml");
    // The first run writes the mock tree; then one of its JPEGs is spoiled.
    let first = tiny_recipe(
        root.path(),
        1,
        &["train.save_model=false", "train.eval=false"],
    );
    run_checked(&first, file, stack, &options).unwrap();
    let broken = root
        .path()
        .join("mock")
        .join(mock_class_name(0))
        .join(mock_file_name(0, 0));
    std::fs::write(&broken, b"not a JPEG").unwrap();
    // 24 training images in batches of 8: 9 steps read every training image 3 times.
    let recipe = tiny_recipe(
        root.path(),
        9,
        &["data.on_corrupt=\"skip\"", "train.save_model=false"],
    );
    let summary = run_checked(&recipe, file, stack, &options).unwrap();
    assert_eq!(
        summary.skipped_images,
        1,
        "{} is one file",
        broken.display()
    );
}
