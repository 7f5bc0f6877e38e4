//! `bench`: training speed, start-up time and peak memory of recipes in every mode.
//!
//! ```sh
//! cargo run --release --bin bench -- configs/bench/resnet50.toml configs/bench/bert_base.toml \
//!     --modes eager,fused,acc --precisions f32,bf16 --out bench-results
//! cargo run --release --bin bench -- --merge a/results.jsonl --merge torch.jsonl --out report
//! ```

use anyhow::{Context, Result};
use burnacc_bench::{
    BenchPlan, DataFeed, StepCounts, child_main, markdown_table, read_records, run_bench,
    write_report,
};
use burnacc_train::recipe::Mode;
use clap::Parser;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// Measure training speed (samples/s), start-up time and peak memory of recipes on synthetic
/// batches, each configuration in its own process. Writes results.jsonl, table.md and
/// chart.png into --out.
#[derive(Parser, Debug)]
#[command(version, about)]
struct Args {
    /// Recipes to measure (model, batch size, input size, optimizer, device). With none, only
    /// the --merge files are reported.
    recipes: Vec<PathBuf>,
    /// Override a key of every recipe, --set train.batch_size=8, or of the recipes with file
    /// stem STEM, --set bert_base:train.batch_size=64 (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
    /// Modes, comma-separated: eager, fused, acc.
    #[arg(long, value_delimiter = ',', default_value = "eager,fused,acc")]
    modes: Vec<String>,
    /// Precisions, comma-separated: f32, bf16, f16 (autocast; mode acc).
    #[arg(long, value_delimiter = ',', default_value = "f32,bf16")]
    precisions: Vec<String>,
    /// Batches, comma-separated: synthetic (one batch kept on the device) and/or real (the
    /// recipe's [data] through the loader and the device prefetcher, as `train` reads it).
    #[arg(long, value_delimiter = ',', default_value = "synthetic")]
    data: Vec<String>,
    /// Single timed steps before the steady-state windows (the first compiles and autotunes).
    #[arg(long, default_value_t = 3)]
    warmup: usize,
    /// Steps per timed window.
    #[arg(long, default_value_t = 10)]
    steps: usize,
    /// Timed windows; the median window is reported.
    #[arg(long, default_value_t = 3)]
    windows: usize,
    /// Time limit of one configuration, in seconds; a configuration past it is killed and
    /// reported as `timeout` with what it measured.
    #[arg(long, default_value_t = 600)]
    timeout: u64,
    /// JSON-lines results of other runs (e.g. scripts/torch_bench.py) to report alongside.
    #[arg(long)]
    merge: Vec<PathBuf>,
    /// Output folder.
    #[arg(long, default_value = "bench-results")]
    out: PathBuf,
    /// Every configuration starts with an empty kernel cache (cold); with --warm-start,
    /// configurations on CubeCL devices run a second time with the cache the first run filled.
    #[arg(long)]
    warm_start: bool,
    /// Do not count kernel launches and memory reservations per step on CubeCL devices
    /// (counting formats and logs a message per launch; on a fast GPU that shows in the step
    /// time).
    #[arg(long)]
    no_count_launches: bool,
    /// Internal: run one configuration (JSON) in this process.
    #[arg(long, hide = true)]
    case: Option<String>,
}

fn parse_modes(names: &[String]) -> Result<Vec<Mode>> {
    names
        .iter()
        .map(|name| {
            let value = toml::Value::String(name.trim().to_owned());
            Mode::deserialize(value)
                .map_err(|_| anyhow::anyhow!("--modes: unknown mode `{name}` (eager, fused, acc)"))
        })
        .collect()
}

use serde::Deserialize;

/// Counts host heap bytes so CPU runs can report their peak memory.
#[global_allocator]
static ALLOCATOR: burnacc_checkpoint::heap::CountingAllocator =
    burnacc_checkpoint::heap::CountingAllocator;

fn main() -> ExitCode {
    let started = Instant::now();
    let args = Args::parse();
    let result = match &args.case {
        Some(case) => child_main(case, started),
        None => run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &Args) -> Result<()> {
    for (flag, value) in [
        ("--warmup", args.warmup),
        ("--steps", args.steps),
        ("--windows", args.windows),
    ] {
        anyhow::ensure!(value >= 1, "{flag} must be at least 1, got {value}");
    }
    for p in &args.precisions {
        anyhow::ensure!(
            matches!(p.as_str(), "f32" | "bf16" | "f16"),
            "--precisions: unknown precision `{p}` (f32, bf16, f16)"
        );
    }
    for recipe in &args.recipes {
        anyhow::ensure!(
            recipe.is_file(),
            "recipe {} does not exist",
            recipe.display()
        );
    }
    // Read once, before any case runs: a bad file stops the run at once.
    let mut merge = Vec::new();
    for file in &args.merge {
        merge.extend(read_records(file)?);
    }
    let plan = BenchPlan {
        recipes: args.recipes.clone(),
        sets: args.sets.clone(),
        modes: parse_modes(&args.modes)?,
        precisions: args.precisions.clone(),
        data: args
            .data
            .iter()
            .map(|d| DataFeed::parse(d))
            .collect::<Result<_>>()?,
        counts: StepCounts {
            warmup: args.warmup,
            steps: args.steps,
            windows: args.windows,
        },
        limit: Duration::from_secs(args.timeout),
        merge,
        out: args.out.clone(),
        warm_start: args.warm_start,
        count_launches: !args.no_count_launches,
    };
    let records = if plan.recipes.is_empty() {
        let records = plan.merge.clone();
        anyhow::ensure!(
            !records.is_empty(),
            "nothing to measure or report: give recipes or --merge files"
        );
        write_report(&records, &plan.out)?;
        records
    } else {
        let exe = std::env::current_exe().context("cannot find the bench binary's path")?;
        run_bench(&plan, &exe)?
    };
    println!("{}", markdown_table(&records));
    println!(
        "results: {0}/results.jsonl, {0}/table.md, {0}/chart.png",
        plan.out.display()
    );
    Ok(())
}
