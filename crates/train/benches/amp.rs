//! Mixed-precision benchmark: ResNet-50 step time and peak memory with AMP off, bf16 and f16,
//! through the trainer (`run_checked`, mode acc), on each device asked for.
//!
//! `cargo bench -p burnacc-train --bench amp -- [devices] [batch] [steps]`
//!
//! devices: comma-separated `cpu`, `wgpu`, `cuda` (default `cpu`); batch default 8; steps
//! default 6. Each configuration runs in a fresh process (this binary with `--one`), so
//! CubeCL's memory pool and autotune caches start empty for each. Step time is the median
//! over the logged intervals after the first step (compilation and autotuning excluded);
//! memory is the host heap peak on the CPU and the pool reservation on CubeCL devices.
//! Results: docs/amp.md.

use burnacc_checkpoint::heap::reset_host_peak;
use burnacc_train::precision::supported_float_dtypes;
use burnacc_train::recipe::{Mode, load_recipe};
use burnacc_train::stack::resolve_stack;
use burnacc_train::trainer::{RunOptions, run_checked};
use std::path::Path;
use std::process::Command;

/// Counts host heap bytes so CPU runs can report their peak memory.
#[global_allocator]
static ALLOCATOR: burnacc_checkpoint::heap::CountingAllocator =
    burnacc_checkpoint::heap::CountingAllocator;

const AMP: [&str; 3] = ["off", "bf16", "f16"];

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    if args.first().map(String::as_str) == Some("--one") {
        return one(&args[1], &args[2], &args[3], &args[4]);
    }
    let devices = args.first().cloned().unwrap_or_else(|| "cpu".into());
    let batch = args.get(1).cloned().unwrap_or_else(|| "8".into());
    let steps = args.get(2).cloned().unwrap_or_else(|| "6".into());
    println!("ResNet-50, 224 px, batch {batch}, {steps} steps, mode acc, SGD momentum");
    println!(
        "{:<6} {:<5} {:>10} {:>10} {:>12} {:>8}",
        "device", "amp", "samples/s", "speed-up", "peak MB", "memory"
    );
    let exe = std::env::current_exe().expect("the bench binary's path");
    for device in devices.split(',') {
        let mut base: Option<(f64, f64)> = None;
        for amp in AMP {
            let out = Command::new(&exe)
                .args(["--one", device, amp, &batch, &steps])
                .output()
                .expect("cannot run the bench binary");
            let text = String::from_utf8_lossy(&out.stdout);
            let Some(line) = text.lines().find_map(|l| l.strip_prefix("RESULT ")) else {
                let why = String::from_utf8_lossy(&out.stderr);
                let why = why
                    .lines()
                    .rev()
                    .find(|l| !l.trim().is_empty())
                    .unwrap_or("");
                println!("{device:<6} {amp:<5} not run: {why}");
                continue;
            };
            let mut fields = line
                .split_whitespace()
                .map(|f| f.parse::<f64>().unwrap_or(f64::NAN));
            let (speed, peak) = (fields.next().unwrap(), fields.next().unwrap());
            let (base_speed, base_peak) = *base.get_or_insert((speed, peak));
            println!(
                "{device:<6} {amp:<5} {speed:>10.2} {:>9.2}x {:>12.0} {:>7.2}x",
                speed / base_speed,
                peak / 1e6,
                peak / base_peak
            );
        }
    }
}

/// One configuration, in this process: prints `RESULT <samples/s> <peak bytes>`.
fn one(device: &str, amp: &str, batch: &str, steps: &str) {
    let recipe_file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs/resnet50.toml");
    let runs = std::env::temp_dir().join("burnacc-bench-amp");
    let mut sets = vec![
        format!("backend.device={device}"),
        format!("train.batch_size={batch}"),
        format!("train.max_steps={steps}"),
        "train.log_every=1".into(),
        "train.eval=false".into(),
        "train.save_model=false".into(),
        format!("train.run_dir={runs:?}"),
        // 100 classes of the mock ImageNet: enough distinct JPEGs, quicker to write once.
        "data.mock.classes=100".into(),
        "data.mock.images_per_class=8".into(),
    ];
    if amp != "off" {
        sets.push("amp.enabled=true".into());
        sets.push(format!("amp.dtype={amp}"));
    }
    let recipe = load_recipe(&recipe_file, &sets).unwrap_or_else(|e| panic!("{e}"));
    let stack = resolve_stack(Mode::Acc, recipe.backend.device).unwrap_or_else(|e| panic!("{e}"));
    if amp != "off" && !supported_float_dtypes(stack).contains(&amp) {
        panic!("{amp} is not supported on {device}");
    }
    reset_host_peak();
    let options = RunOptions {
        quiet: true,
        ..Default::default()
    };
    let summary =
        run_checked(&recipe, &recipe_file, stack, &options).unwrap_or_else(|e| panic!("{e:#}"));
    let stats = summary.outcome.stats;
    println!(
        "RESULT {} {}",
        stats.median_samples_per_sec.unwrap_or(f64::NAN),
        stats.peak_memory.map_or(f64::NAN, |p| p as f64)
    );
}
