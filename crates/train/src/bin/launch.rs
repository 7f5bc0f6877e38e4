//! `launch`: a data-parallel run of one `train` process per device (like `torchrun`).
//!
//! `cargo run --release --bin launch -- --nproc-per-node 2 -- configs/quickstart.toml`
//!
//! Several machines: run it on each, with the same `--nnodes`, `--master-addr` (node 0's host)
//! and `--master-port`, and this machine's `--node-rank` and `--node-addr`.

use anyhow::{Context, Result, bail};
use burnacc_train::launch::{LaunchPlan, run_processes, sibling_train_binary};
use burnacc_train::recipe::load_recipe;
use clap::Parser;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Start one `train` process per device and watch them (torchrun's options).
#[derive(Parser, Debug)]
#[command(version, about)]
struct Args {
    /// Processes (devices) on this machine.
    #[arg(long, default_value_t = 1)]
    nproc_per_node: usize,
    /// Machines in the run.
    #[arg(long, default_value_t = 1)]
    nnodes: usize,
    /// This machine's index, 0..nnodes (node 0 hosts rank 0).
    #[arg(long, default_value_t = 0)]
    node_rank: usize,
    /// Node 0's address, as every machine reaches it.
    #[arg(long, default_value = "127.0.0.1")]
    master_addr: String,
    /// Rank 0's orchestrator port; rank r also listens on master-port + 1 + r.
    #[arg(long, default_value_t = 29500)]
    master_port: u16,
    /// This machine's address as the others reach it (needed with --nnodes > 1).
    #[arg(long)]
    node_addr: Option<String>,
    /// What each process runs: `train`'s arguments, the recipe first (after `--`).
    #[arg(last = true, required = true, value_name = "RECIPE [TRAIN OPTIONS]")]
    train_args: Vec<String>,
}

/// The `--set` overrides among `train`'s arguments.
fn sets(args: &[String]) -> Vec<String> {
    let mut sets = Vec::new();
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        if arg == "--set" {
            sets.extend(rest.next().cloned());
        } else if let Some(value) = arg.strip_prefix("--set=") {
            sets.push(value.to_owned());
        }
    }
    sets
}

fn run(args: Args) -> Result<bool> {
    let node_addr = match (args.node_addr, args.nnodes) {
        (Some(addr), _) => addr,
        (None, 1) => "127.0.0.1".into(),
        (None, _) => bail!("--node-addr is needed with --nnodes > 1: this machine's address"),
    };
    let plan = LaunchPlan {
        nproc_per_node: args.nproc_per_node,
        nnodes: args.nnodes,
        node_rank: args.node_rank,
        master_addr: args.master_addr,
        master_port: args.master_port,
        node_addr,
    };
    let groups = plan.groups()?;
    // The recipe is checked here, before any process starts.
    let recipe_file = PathBuf::from(&args.train_args[0]);
    let recipe = load_recipe(&recipe_file, &sets(&args.train_args[1..]))?;
    let train = sibling_train_binary()?;
    let grace = Duration::from_secs_f64(recipe.ddp.timeout_secs) + Duration::from_secs(30);
    let exits = run_processes(&train, &args.train_args, &groups, grace)
        .context("launch: running the processes")?;
    let failed: Vec<_> = exits.iter().filter(|e| !e.success()).collect();
    for exit in &failed {
        match exit.status {
            Some(status) => eprintln!("launch: rank {} ended with {status}", exit.rank),
            None => eprintln!("launch: rank {} was stopped", exit.rank),
        }
    }
    Ok(failed.is_empty())
}

fn main() -> ExitCode {
    match run(Args::parse()) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
