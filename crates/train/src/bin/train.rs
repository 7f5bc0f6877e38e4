//! `train`: runs a recipe.
//!
//! `cargo run --release --bin train -- configs/resnet50.toml --set train.max_steps=5`

use burnacc_train::trainer::{RunOptions, run_recipe};
use clap::Parser;
use std::path::PathBuf;
use std::process::ExitCode;

/// Train a model as a TOML recipe says (see configs/).
#[derive(Parser, Debug)]
#[command(version, about)]
struct Args {
    /// The recipe file, e.g. configs/resnet50.toml.
    recipe: PathBuf,
    /// Override a recipe key: --set train.max_steps=5 (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
    /// No progress bar (plain log lines go to stderr).
    #[arg(long)]
    quiet: bool,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let options = RunOptions {
        sets: args.sets,
        quiet: args.quiet,
    };
    match run_recipe(&args.recipe, &options) {
        Ok(summary) => {
            println!("run folder: {}", summary.run_dir.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
