//! The `bench` harness: every recipe × mode × precision asked for, each in its own process,
//! timed separately for start-up (runtime start, first step with compilation and autotuning,
//! warm-up) and steady state (synchronised windows of steps), with peak memory; results as JSON
//! lines, a Markdown table and a PNG chart, merged with PyTorch's results when given.

mod case;
mod chart;
pub mod device_work;
mod feed;
mod measure;
mod record;
mod runner;
mod table;

pub use case::{BenchCase, run_case_here};
pub use chart::{render, write_chart};
pub use feed::DataFeed;
pub use measure::{Measure, StepCounts};
pub use record::{BenchRecord, Status, read_records, to_json_lines};
pub use runner::{child_main, run_case_in_child};
pub use table::markdown_table;

use anyhow::Result;
use burnacc_train::recipe::Mode;
use burnacc_train::run_dir::write_atomic;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// What to measure and where to write it.
#[derive(Clone, Debug)]
pub struct BenchPlan {
    /// Recipes (model, batch, input size, optimizer, device).
    pub recipes: Vec<PathBuf>,
    /// `--set` overrides: `key=value` for every recipe, `stem:key=value` for the recipes whose
    /// file stem is `stem` (`bert_base:train.batch_size=64`).
    pub sets: Vec<String>,
    /// Modes to measure.
    pub modes: Vec<Mode>,
    /// `f32`, `bf16`, `f16`.
    pub precisions: Vec<String>,
    /// Synthetic and/or real batches.
    pub data: Vec<DataFeed>,
    /// Steps per case.
    pub counts: StepCounts,
    /// Time limit of one case.
    pub limit: Duration,
    /// Results of other runs (PyTorch's, read from `--merge` files) to show alongside.
    pub merge: Vec<BenchRecord>,
    /// Output folder: `results.jsonl`, `table.md`, `chart.png`.
    pub out: PathBuf,
    /// Run each CubeCL case a second time with the kernel cache its first run filled.
    pub warm_start: bool,
    /// Count kernel launches and reservations per step on CubeCL devices.
    pub count_launches: bool,
}

impl BenchPlan {
    /// The cases in the order they run: per recipe, per mode, per precision.
    pub fn cases(&self) -> Vec<BenchCase> {
        let mut cases = Vec::new();
        for recipe in &self.recipes {
            for &mode in &self.modes {
                for precision in &self.precisions {
                    for &data in &self.data {
                        cases.push(BenchCase {
                            recipe: recipe.clone(),
                            sets: sets_for(&self.sets, recipe),
                            mode,
                            precision: precision.clone(),
                            data,
                            counts: self.counts,
                            count_launches: self.count_launches,
                        });
                    }
                }
            }
        }
        cases
    }
}

/// The overrides of `sets` that apply to `recipe`, scopes removed.
pub fn sets_for(sets: &[String], recipe: &Path) -> Vec<String> {
    let stem = recipe.file_stem().map(|s| s.to_string_lossy().into_owned());
    sets.iter()
        .filter_map(|set| {
            let key = set.split('=').next().unwrap_or_default();
            match key.split_once(':') {
                None => Some(set.clone()),
                Some((scope, _)) if Some(scope) == stem.as_deref() => {
                    Some(set[scope.len() + 1..].to_owned())
                }
                Some(_) => None,
            }
        })
        .collect()
}

/// Runs every case of `plan` with `exe` (the `bench` binary) and writes the results; after each
/// case `results.jsonl` is rewritten atomically, so a run cut short keeps what it measured.
pub fn run_bench(plan: &BenchPlan, exe: &Path) -> Result<Vec<BenchRecord>> {
    std::fs::create_dir_all(&plan.out)?;
    let mut records = Vec::new();
    // Every case starts from an empty kernel cache of its own: cold start-up, whatever ran
    // before; with `warm_start` it runs again on what its first run cached.
    let cache = plan.out.join(".kernel-cache");
    for case in plan.cases() {
        eprintln!(
            "bench: {} mode {} {} …",
            case.recipe.display(),
            case.mode,
            case.precision
        );
        remove_cache(&cache)?;
        let cold = run_case_in_child(exe, &case, plan.limit, &cache)?;
        let cubecl = cold.status != Some(Status::Skipped) && cold.device != "cpu";
        let mut runs = vec![cold];
        if cubecl && plan.warm_start && runs[0].status == Some(Status::Ok) {
            runs.push(run_case_in_child(exe, &case, plan.limit, &cache)?);
        }
        remove_cache(&cache)?;
        for (mut record, state) in runs.into_iter().zip(["cold", "warm"]) {
            if cubecl {
                record.kernel_cache = Some(state.to_owned());
            }
            report_case(&record);
            records.push(record);
        }
        write_atomic(
            &plan.out.join("results.jsonl"),
            to_json_lines(&records).as_bytes(),
        )?;
    }
    let mut all = plan.merge.clone();
    all.extend(records.iter().cloned());
    write_report(&all, &plan.out)?;
    Ok(all)
}

fn remove_cache(dir: &Path) -> Result<()> {
    match std::fs::remove_dir_all(dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(anyhow::anyhow!(
            "cannot empty the kernel cache {}: {e}",
            dir.display()
        )),
        _ => Ok(()),
    }
}

fn report_case(record: &BenchRecord) {
    eprintln!(
        "bench: {} {} {}{}: {} {}",
        record.model,
        record.mode,
        record.precision,
        record
            .kernel_cache
            .as_deref()
            .map(|c| format!(" ({c} kernel cache)"))
            .unwrap_or_default(),
        record.status.map_or("failed", |s| s.as_str()),
        record
            .samples_per_sec
            .map(|v| format!("{v:.2} samples/s"))
            .or(record.reason.clone())
            .unwrap_or_default()
    );
}

/// Writes `table.md` and `chart.png` of `records` into `out`.
pub fn write_report(records: &[BenchRecord], out: &Path) -> Result<()> {
    std::fs::create_dir_all(out)?;
    write_atomic(&out.join("table.md"), markdown_table(records).as_bytes())?;
    write_chart(records, &out.join("chart.png"))
}
