//! `train`: runs a recipe.
//!
//! `cargo run --release --bin train -- configs/resnet50.toml --set train.max_steps=5`
//! `cargo run --release --bin train -- --resume runs/resnet50/run-3`

use burnacc_ddp::ProcessGroup;
use burnacc_train::trainer::{ProfileRequest, RunOptions, run_recipe};
use clap::Parser;
use std::path::PathBuf;
use std::process::ExitCode;

/// Counts host heap bytes so CPU runs can report their peak memory.
#[global_allocator]
static ALLOCATOR: burnacc_checkpoint::heap::CountingAllocator =
    burnacc_checkpoint::heap::CountingAllocator;

/// Train a model as a TOML recipe says (see configs/).
#[derive(Parser, Debug)]
#[command(version, about, args_conflicts_with_subcommands = true)]
struct Args {
    #[command(subcommand)]
    command: Option<Command>,
    /// The recipe file, e.g. configs/resnet50.toml. With --resume it may be left out: the
    /// checkpoint's own recipe is used.
    recipe: Option<PathBuf>,
    /// Continue a run from its latest complete checkpoint (a run folder, runs/<recipe>/run-N)
    /// or from one checkpoint (runs/<recipe>/run-N/checkpoints/step-S), in its run folder.
    /// A recipe given too must train the same way (only steps, logging, saving, evaluation
    /// and the backend may change).
    #[arg(long, value_name = "DIR")]
    resume: Option<PathBuf>,
    /// Override a recipe key: --set train.max_steps=5 (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
    /// No progress bar (plain log lines go to stderr).
    #[arg(long)]
    quiet: bool,
    /// Write a Chrome trace (trace.json) of a few steps after warm-up: phases with the device
    /// synchronised, and the ops burnacc's backend saw (mode acc).
    #[arg(long)]
    profile: bool,
    /// Steps traced with --profile.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..))]
    profile_steps: u64,
    /// Folder of trace.json (default: the run folder).
    #[arg(long, value_name = "DIR")]
    profile_folder: Option<PathBuf>,
}

/// What `train` does besides training.
#[derive(clap::Subcommand, Debug)]
enum Command {
    /// Draw RUN_DIR/curves.png (loss, accuracy, learning rate, samples/s, memory against the
    /// step) from RUN_DIR/log.jsonl, e.g. of a run still going.
    Plot {
        /// A run folder, runs/<recipe>/run-N.
        run_dir: PathBuf,
    },
}

fn main() -> ExitCode {
    let args = Args::parse();
    if let Some(Command::Plot { run_dir }) = &args.command {
        return match burnacc_train::curves::write_curves(run_dir) {
            Ok(path) => {
                println!("{}", path.display());
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("error: {e:#}");
                ExitCode::FAILURE
            }
        };
    }
    // Started by `launch`: this process's rank and where the others are.
    let process = match ProcessGroup::from_env() {
        Ok(process) => process,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    // Without a recipe, the checkpoint's own (its run folder's latest, or the one named).
    let recipe = match (&args.recipe, &args.resume) {
        (Some(recipe), _) => recipe.clone(),
        // Only located here: the run reads and checks the checkpoint once, before any work.
        (None, Some(resume)) => match burnacc_train::resume::locate(resume) {
            Ok((_, checkpoint)) => checkpoint.join(burnacc_train::resume::RECIPE_FILE),
            Err(e) => {
                eprintln!("error: {e:#}");
                return ExitCode::FAILURE;
            }
        },
        (None, None) => {
            eprintln!("error: give a recipe file (or --resume DIR, or plot RUN_DIR); see --help");
            return ExitCode::FAILURE;
        }
    };
    let options = RunOptions {
        process,
        resume: args.resume,
        sets: args.sets,
        quiet: args.quiet,
        profile: args.profile.then_some(ProfileRequest {
            steps: args.profile_steps as usize,
            folder: args.profile_folder,
        }),
    };
    match run_recipe(&recipe, &options) {
        Ok(summary) => {
            if options.is_leader() {
                println!("run folder: {}", summary.run_dir.display());
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
