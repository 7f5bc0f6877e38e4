//! Tier 3: every run draws `curves.png` from its `log.jsonl` (loss, accuracy, learning rate,
//! samples/s, memory against the step), and `train plot RUN_DIR` draws the same figure again
//! at any time; a folder without a log is refused naming it.

use burnacc_train::recipe::{DeviceSpec, Mode};
use burnacc_train::stack::Stack;
use burnacc_train::trainer::{RunOptions, run_checked};
use std::path::Path;
use std::process::Command;

use crate::common::tiny_recipe;

/// Pixels of exactly `color` in an RGB image.
fn count(image: &image::RgbImage, color: [u8; 3]) -> usize {
    image.pixels().filter(|p| p.0 == color).count()
}

#[test]
fn a_run_draws_its_curves_and_train_plot_draws_them_again() {
    let root = tempfile::tempdir().unwrap();
    let recipe = tiny_recipe(
        root.path(),
        6,
        &["train.eval_every=2", "train.save_model=false"],
    );
    let options = RunOptions {
        quiet: true,
        ..Default::default()
    };
    let stack = Stack::new(Mode::Eager, DeviceSpec::Cpu);
    let summary = run_checked(&recipe, Path::new("curves.toml"), stack, &options).unwrap();
    let path = summary.run_dir.join("curves.png");
    let drawn = std::fs::read(&path).expect("the run drew curves.png");
    let image = image::load_from_memory(&drawn).unwrap().to_rgb8();
    // Five panels in two columns.
    assert_eq!(image.dimensions(), (1120, 960));
    // The training series (blue) and the held-out series (orange) are drawn.
    assert!(count(&image, [90, 120, 200]) > 500, "no training curve");
    assert!(count(&image, [220, 90, 30]) > 100, "no held-out curve");

    std::fs::remove_file(&path).unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_train"))
        .arg("plot")
        .arg(&summary.run_dir)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        std::fs::read(&path).unwrap() == drawn,
        "train plot drew another figure"
    );

    let output = Command::new(env!("CARGO_BIN_EXE_train"))
        .arg("plot")
        .arg(root.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(
        stderr.contains(&root.path().display().to_string()) && stderr.contains("log.jsonl"),
        "{stderr}"
    );
}
