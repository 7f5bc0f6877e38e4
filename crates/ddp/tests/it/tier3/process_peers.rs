//! Two processes over loopback train exactly as one device on the joined batch: after three
//! steps of SGD with momentum, with the gradients all-reduced in three buckets per step (nine
//! all-reduces of one registration across processes, plus the parameter check), the same
//! gradients and weights (rel ≤ 1e-5).
//!
//! The parent test starts this test binary twice more, as the two ranks (`process_peer`, an
//! ignored entry point run only by the parent), with the environment `launch` sets.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::*;
use burn::backend::Flex;
use burnacc_ddp::{DdpError, Peer, PeerConfig, ProcessGroup};
use burnacc_tests::processes::{free_port_block, wait_bounded};

/// Where a rank writes its first-step gradient and final weights; unset outside a rank.
const PEER_OUTPUT: &str = "BURNACC_TEST_PEER_OUTPUT";

/// One rank: joins the run the environment describes, trains on its half of the batch, writes
/// what it got. Not a test of its own: the parent test runs it (`--ignored`) in each child.
#[test]
#[ignore = "a rank of two_processes_train_like_one_device_on_the_joined_batch"]
fn process_peer() {
    let Ok(output) = std::env::var(PEER_OUTPUT) else {
        return;
    };
    let group = ProcessGroup::from_env()
        .unwrap()
        .expect("WORLD_SIZE is set");
    let device = Default::default();
    let start = model(&device);
    // Small buckets: the 4 parameters go in 3 all-reduce calls.
    let config = PeerConfig {
        bucket_bytes: 400,
        timeout: Duration::from_secs(60),
        ..PeerConfig::new(group.world)
    };
    let peer = Peer::<Flex>::join_process(&group, config, device).unwrap();
    peer.check_parameters_agree(&start, &Default::default())
        .unwrap();
    let half = ROWS / group.world;
    let rows = group.rank * half..(group.rank + 1) * half;
    let (grad, weights) = train(start, |m| {
        peer.all_reduce_gradients::<B, _>(m, gradients(m, rows.clone()))
    })
    .unwrap();
    peer.finish().unwrap();
    let text = |v: &[f32]| v.iter().map(f32::to_string).collect::<Vec<_>>().join(" ");
    std::fs::write(output, format!("{}\n{}\n", text(&grad), text(&weights))).unwrap();
}

fn read_rank(path: &Path) -> (Vec<f32>, Vec<f32>) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text
        .lines()
        .map(|l| l.split(' ').map(|v| v.parse().unwrap()).collect());
    (lines.next().unwrap(), lines.next().unwrap())
}

/// The full name of [`process_peer`] in this test binary (`tier3::process_peers::process_peer`),
/// which each child process runs.
fn peer_test_name() -> String {
    let module = module_path!();
    let (_binary, path) = module
        .split_once("::")
        .expect("a module of the test binary");
    format!("{path}::process_peer")
}

#[test]
fn two_processes_train_like_one_device_on_the_joined_batch() {
    let device = Default::default();
    let (one_grad, one_weights) = train(model(&device), |m| Ok(gradients(m, 0..ROWS))).unwrap();

    let dir = tempfile::tempdir().unwrap();
    let world = 2;
    let master_port = free_port_block(world as u16 + 1);
    let children: Vec<_> = (0..world)
        .map(|rank| {
            let group = ProcessGroup {
                rank,
                world,
                local_rank: rank,
                master_addr: "127.0.0.1".into(),
                master_port,
                node_addr: "127.0.0.1".into(),
            };
            Command::new(std::env::current_exe().unwrap())
                .args(["--exact", &peer_test_name(), "--ignored", "--nocapture"])
                .envs(group.to_env())
                .env(PEER_OUTPUT, dir.path().join(format!("rank{rank}")))
                .spawn()
                .unwrap()
        })
        .collect();
    for (rank, mut child) in children.into_iter().enumerate() {
        let status = wait_bounded(&mut child, Duration::from_secs(120), "a rank");
        assert!(status.success(), "rank {rank}: {status}");
    }
    let ranks: Vec<_> = (0..world)
        .map(|rank| read_rank(&dir.path().join(format!("rank{rank}"))))
        .collect();
    for (rank, (grad, weights)) in ranks.iter().enumerate() {
        let (g, w) = (max_rel(grad, &one_grad), max_rel(weights, &one_weights));
        println!("rank {rank}: gradient rel {g:.2e}, weights after {STEPS} steps rel {w:.2e}");
        assert!(g <= 1e-5 && w <= 1e-5, "rank {rank}: {g:e}, {w:e}");
    }
    assert_eq!(ranks[0], ranks[1], "the processes diverged");
}

#[test]
fn a_run_nobody_else_joins_is_an_error_naming_the_address() {
    // Rank 1 of 2, with no rank 0 serving the orchestrator.
    let master_port = free_port_block(3);
    let group = ProcessGroup {
        rank: 1,
        world: 2,
        local_rank: 1,
        master_addr: "127.0.0.1".into(),
        master_port,
        node_addr: "127.0.0.1".into(),
    };
    let config = PeerConfig {
        timeout: Duration::from_secs(1),
        ..PeerConfig::new(2)
    };
    let started = Instant::now();
    let error = Peer::<Flex>::join_process(&group, config, Default::default()).unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(matches!(error, DdpError::Unreachable { .. }), "{error}");
    let message = error.to_string();
    assert!(
        message.contains(&format!("no run at ws://127.0.0.1:{master_port}")),
        "{message}"
    );
}
