//! Tier 3: `launch --nproc-per-node 2` trains a tiny Swin in two `train` processes over
//! loopback exactly as one process on the joined batch (losses rel ≤ 1e-5 at every step, the
//! same held-out accuracy), with rank 0 alone writing the run folder, and so do two launched
//! nodes of one process each and two devices of one process (`[ddp] devices`, one thread
//! each); a killed process ends the other's run with an error within the recipe's timeout.

use crate::common::{launch_two, logged_losses, losses, rel, tiny_swin, tiny_swin_text};
use burnacc_ddp::ProcessGroup;
use burnacc_tests::processes::{free_port_block, wait_bounded};
use burnacc_train::recipe::{DeviceSpec, Mode};
use burnacc_train::stack::Stack;
use burnacc_train::trainer::RunSummary;
use burnacc_train::trainer::{RunOptions, run_checked, run_recipe};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const STEPS: usize = 4;

/// The run folders under `runs`.
fn run_dirs(runs: &Path) -> Vec<PathBuf> {
    match std::fs::read_dir(runs) {
        Ok(entries) => entries.map(|e| e.unwrap().path()).collect(),
        Err(_) => Vec::new(),
    }
}

/// Writes the tiny Swin recipe for the CPU acc stack with `batch` samples per process and
/// runs under `root/runs-<name>`; returns its path.
fn write_recipe(root: &Path, name: &str, batch: usize, extra: &str) -> PathBuf {
    let text = tiny_swin_text(root, STEPS)
        .replace("batch_size = 8", &format!("batch_size = {batch}"))
        .replace("runs\"", &format!("runs-{name}\""));
    let file = root.join(format!("{name}.toml"));
    std::fs::write(
        &file,
        format!("{text}\n[backend]\nmode = \"acc\"\ndevice = \"cpu\"\n{extra}"),
    )
    .unwrap();
    file
}

fn quiet() -> RunOptions {
    RunOptions {
        quiet: true,
        ..Default::default()
    }
}

/// One process on batches of 8 (this also writes the mock images the other runs read).
fn joined_batch_run(root: &Path) -> RunSummary {
    run_checked(
        &tiny_swin(root, STEPS, &[]),
        Path::new("tiny_swin.toml"),
        Stack::new(Mode::Acc, DeviceSpec::Cpu),
        &quiet(),
    )
    .unwrap()
}

fn assert_same_losses(two: &[f64], one: &[f64]) {
    assert_eq!(two.len(), STEPS);
    for (step, (a, b)) in two.iter().zip(one).enumerate() {
        println!("step {}: 2 replicas {a:.7}, 1 replica {b:.7}", step + 1);
        assert!(rel(*a, *b) <= 1e-5, "step {}: {a} vs {b}", step + 1);
    }
}

#[test]
fn two_launched_processes_train_like_one_process_on_the_joined_batch() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let options = quiet();
    let joined = joined_batch_run(root);
    let one = losses(&joined);

    // Two processes on batches of 4 each.
    let recipe = write_recipe(
        root,
        "ddp",
        4,
        "[ddp]\nbucket = \"64KiB\"\ntimeout_secs = 60\n",
    );
    launch_two(&recipe, &[]);

    // Rank 0 alone wrote a run folder.
    let dirs = run_dirs(&root.join("runs-ddp"));
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    assert_same_losses(&logged_losses(&dirs[0]), &one);
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dirs[0].join("summary.json")).unwrap())
            .unwrap();
    let eval = &summary["outcome"]["eval"];
    assert_eq!(
        eval["correct"].as_u64(),
        joined.outcome.eval.as_ref().map(|e| e.correct as u64)
    );

    // The comparison can fail: one process on its half of the batch alone trains otherwise.
    let half = run_checked(
        &tiny_swin(root, STEPS, &["train.batch_size=4"]),
        Path::new("tiny_swin.toml"),
        Stack::new(Mode::Acc, DeviceSpec::Cpu),
        &options,
    )
    .unwrap();
    assert!(rel(losses(&half)[STEPS - 1], one[STEPS - 1]) > 1e-3);
}

#[test]
fn two_launched_nodes_of_one_process_each_train_like_one_process() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let one = losses(&joined_batch_run(root));
    let recipe = write_recipe(root, "nodes", 4, "[ddp]\ntimeout_secs = 60\n");
    let port = free_port_block(3).to_string();
    // Two "machines" on loopback: node 1 starts first and waits for node 0's orchestrator.
    let mut nodes: Vec<_> = ["1", "0"]
        .into_iter()
        .map(|node_rank| {
            Command::new(env!("CARGO_BIN_EXE_launch"))
                .args([
                    "--nnodes",
                    "2",
                    "--node-rank",
                    node_rank,
                    "--nproc-per-node",
                    "1",
                ])
                .args(["--master-addr", "127.0.0.1", "--master-port", &port])
                .args(["--node-addr", "127.0.0.1", "--"])
                .arg(&recipe)
                .arg("--quiet")
                .spawn()
                .unwrap()
        })
        .collect();
    for node in &mut nodes {
        let status = wait_bounded(node, Duration::from_secs(600), "launch of a node");
        assert!(status.success(), "{status}");
    }
    let dirs = run_dirs(&root.join("runs-nodes"));
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    assert_same_losses(&logged_losses(&dirs[0]), &one);
}

#[test]
fn two_devices_of_one_process_train_like_one_device_on_the_joined_batch() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let one = losses(&joined_batch_run(root));
    let recipe = write_recipe(
        root,
        "threads",
        4,
        "[ddp]\ndevices = [\"cpu\", \"cpu\"]\nbucket = \"64KiB\"\ntimeout_secs = 60\n",
    );
    let summary = run_recipe(&recipe, &quiet()).unwrap();
    assert_same_losses(&losses(&summary), &one);
    assert_eq!(run_dirs(&root.join("runs-threads")).len(), 1);
}

#[test]
fn a_killed_process_ends_the_others_run_with_an_error_within_the_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let timeout = 5.0;
    let recipe = write_recipe(
        root,
        "killed",
        4,
        &format!("[ddp]\ntimeout_secs = {timeout}\n"),
    );
    // Long enough to be killed mid-run.
    let sets = ["--set", "train.max_steps=100000", "--quiet"];
    let port = free_port_block(3);
    let stderr0 = root.join("rank0.stderr");
    let mut ranks: Vec<Child> = (0..2)
        .map(|rank| {
            let group = ProcessGroup {
                rank,
                world: 2,
                local_rank: rank,
                master_addr: "127.0.0.1".into(),
                master_port: port,
                node_addr: "127.0.0.1".into(),
            };
            let stderr = match rank {
                0 => Stdio::from(std::fs::File::create(&stderr0).unwrap()),
                _ => Stdio::null(),
            };
            Command::new(env!("CARGO_BIN_EXE_train"))
                .arg(&recipe)
                .args(sets)
                .envs(group.to_env())
                .stderr(stderr)
                .spawn()
                .unwrap()
        })
        .collect();
    // Both are training once rank 0 has logged two steps (each needs rank 1's gradients).
    let started = Instant::now();
    while run_dirs(&root.join("runs-killed"))
        .first()
        .is_none_or(|d| logged_losses(d).len() < 2)
    {
        if let Some(status) = ranks[0].try_wait().unwrap() {
            panic!(
                "rank 0 ended before training ({status}): {}",
                std::fs::read_to_string(&stderr0).unwrap()
            );
        }
        assert!(started.elapsed() < Duration::from_secs(300), "no step");
        std::thread::sleep(Duration::from_millis(100));
    }
    ranks[1].kill().unwrap();
    ranks[1].wait().unwrap();
    let killed = Instant::now();
    let limit = Duration::from_secs_f64(timeout * 4.0);
    let status = wait_bounded(&mut ranks[0], limit, "rank 0 after rank 1 was killed");
    let elapsed = killed.elapsed();
    let stderr = std::fs::read_to_string(&stderr0).unwrap();
    println!("rank 0 ended {elapsed:?} after rank 1 was killed ({status})");
    assert!(!status.success(), "rank 0 must fail: {stderr}");
    assert!(
        stderr.contains("ddp: all_reduce on rank 0 of 2"),
        "rank 0's error names the operation: {stderr}"
    );
}

#[test]
fn launch_refuses_a_bad_recipe_before_starting_any_process() {
    let dir = tempfile::tempdir().unwrap();
    let recipe = write_recipe(dir.path(), "bad", 4, "[ddp]\ntimeout_secs = -1\n");
    let output = Command::new(env!("CARGO_BIN_EXE_launch"))
        .args(["--nproc-per-node", "2", "--"])
        .arg(&recipe)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(stderr.contains("ddp.timeout_secs"), "{stderr}");
    assert!(
        !stderr.contains("launch: rank"),
        "a process started: {stderr}"
    );
    assert!(!dir.path().join("runs-bad").exists());
}
