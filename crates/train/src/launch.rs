//! `launch`: starts one `train` process per local device of a data-parallel run, as `torchrun`
//! (and TorchAcc's `xlarun`) do, and watches them.
//!
//! Each process gets its place in the environment (`RANK`, `WORLD_SIZE`, `LOCAL_RANK`,
//! `MASTER_ADDR`, `MASTER_PORT`, `BURNACC_NODE_ADDR`; [`burnacc_ddp::ProcessGroup`]). Rank 0
//! serves the orchestrator the others meet at; gradients then travel between the processes
//! through burn-collective. When a process fails, the others end on their own within the
//! recipe's `ddp.timeout_secs` (their next all-reduce times out); any still running after that
//! and a grace period are stopped.

use anyhow::{Context, Result, bail};
use burnacc_ddp::ProcessGroup;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

/// The processes of one node of a data-parallel run.
#[derive(Clone, Debug)]
pub struct LaunchPlan {
    /// Processes (devices) on this node.
    pub nproc_per_node: usize,
    /// Nodes (machines) in the run.
    pub nnodes: usize,
    /// This node's index, `0..nnodes`; node 0 hosts rank 0 and its orchestrator.
    pub node_rank: usize,
    /// Host of node 0, as the other nodes reach it.
    pub master_addr: String,
    /// The orchestrator's port on node 0; rank `r` serves its data on `master_port + 1 + r`.
    pub master_port: u16,
    /// This node's address as the other nodes reach it (loopback for one node).
    pub node_addr: String,
}

impl LaunchPlan {
    /// Processes over all nodes.
    pub fn world(&self) -> usize {
        self.nproc_per_node * self.nnodes
    }

    /// Each local process's place in the run, in local-rank order; errors name the bad
    /// option.
    pub fn groups(&self) -> Result<Vec<ProcessGroup>> {
        if self.nproc_per_node == 0 {
            bail!("--nproc-per-node must be at least 1");
        }
        if self.nnodes == 0 || self.node_rank >= self.nnodes {
            bail!(
                "--node-rank {} must be below --nnodes {}",
                self.node_rank,
                self.nnodes
            );
        }
        (0..self.nproc_per_node)
            .map(|local_rank| {
                let group = ProcessGroup {
                    rank: self.node_rank * self.nproc_per_node + local_rank,
                    world: self.world(),
                    local_rank,
                    master_addr: self.master_addr.clone(),
                    master_port: self.master_port,
                    node_addr: self.node_addr.clone(),
                };
                group
                    .validate()
                    .map_err(|e| anyhow::anyhow!("--master-port {}: {e}", self.master_port))?;
                Ok(group)
            })
            .collect()
    }
}

/// The `train` binary next to this executable (cargo builds both into one folder).
pub fn sibling_train_binary() -> Result<PathBuf> {
    let me = std::env::current_exe().context("cannot find this executable")?;
    let train = me.with_file_name(format!("train{}", std::env::consts::EXE_SUFFIX));
    if !train.is_file() {
        bail!(
            "{} not found: build it with `cargo build --release --bin train` (launch starts it)",
            train.display()
        );
    }
    Ok(train)
}

/// How one process ended.
#[derive(Clone, Debug)]
pub struct RankExit {
    /// Global rank.
    pub rank: usize,
    /// Its exit status; `None` when `launch` stopped it.
    pub status: Option<ExitStatus>,
}

impl RankExit {
    /// Whether it exited successfully.
    pub fn success(&self) -> bool {
        self.status.is_some_and(|s| s.success())
    }
}

/// Starts `train args…` once per group and waits for all of them. Once one fails, the others
/// get `grace` to end by themselves (they fail within their collective timeout), then are
/// stopped. Returns every process's exit, in rank order.
pub fn run_processes(
    train: &Path,
    args: &[String],
    groups: &[ProcessGroup],
    grace: Duration,
) -> Result<Vec<RankExit>> {
    // Like torchrun's OMP_NUM_THREADS = 1: processes sharing a machine share its cores, rather
    // than each running one compute thread per core.
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .div_ceil(groups.len())
        .max(1);
    let mut children: Vec<(usize, Option<Child>)> = Vec::new();
    for group in groups {
        let mut command = Command::new(train);
        command.args(args).envs(group.to_env());
        if std::env::var_os("RAYON_NUM_THREADS").is_none() {
            command.env("RAYON_NUM_THREADS", threads.to_string());
        }
        let child = match command.spawn() {
            Ok(child) => child,
            Err(e) => {
                stop_all(&mut children);
                return Err(e).with_context(|| format!("cannot start {}", train.display()));
            }
        };
        eprintln!(
            "launch: rank {} of {} (local rank {}), pid {}",
            group.rank,
            group.world,
            group.local_rank,
            child.id()
        );
        children.push((group.rank, Some(child)));
    }
    let mut exits: Vec<RankExit> = Vec::new();
    let mut deadline: Option<Instant> = None;
    while exits.len() < children.len() {
        for (rank, slot) in children.iter_mut() {
            let Some(child) = slot else { continue };
            if let Some(status) = child.try_wait()? {
                *slot = None;
                if !status.success() && deadline.is_none() {
                    eprintln!(
                        "launch: rank {rank} failed ({status}); waiting up to {grace:?} for \
                         the others to end"
                    );
                    deadline = Some(Instant::now() + grace);
                }
                exits.push(RankExit {
                    rank: *rank,
                    status: Some(status),
                });
            }
        }
        if deadline.is_some_and(|d| Instant::now() > d) {
            for (rank, slot) in children.iter_mut() {
                if let Some(mut child) = slot.take() {
                    eprintln!("launch: stopping rank {rank}, still running after {grace:?}");
                    child.kill().ok();
                    child.wait().ok();
                    exits.push(RankExit {
                        rank: *rank,
                        status: None,
                    });
                }
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    exits.sort_by_key(|e| e.rank);
    Ok(exits)
}

fn stop_all(children: &mut [(usize, Option<Child>)]) {
    for (_, slot) in children {
        if let Some(mut child) = slot.take() {
            child.kill().ok();
            child.wait().ok();
        }
    }
}
