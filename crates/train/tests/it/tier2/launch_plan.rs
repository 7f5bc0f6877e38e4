//! Unit checks of `burnacc_train::launch` through its public API.

use burnacc_train::launch::*;

fn plan(nproc: usize, nnodes: usize, node_rank: usize) -> LaunchPlan {
    LaunchPlan {
        nproc_per_node: nproc,
        nnodes,
        node_rank,
        master_addr: "127.0.0.1".into(),
        master_port: 29500,
        node_addr: "127.0.0.1".into(),
    }
}

#[test]
fn ranks_follow_the_node_and_bad_options_are_named() {
    let groups = plan(2, 2, 1).groups().unwrap();
    let ranks: Vec<_> = groups.iter().map(|g| (g.rank, g.local_rank)).collect();
    assert_eq!(ranks, vec![(2, 0), (3, 1)]);
    assert!(groups.iter().all(|g| g.world == 4));
    let error = |p: LaunchPlan| p.groups().unwrap_err().to_string();
    assert!(error(plan(0, 1, 0)).contains("--nproc-per-node"));
    assert!(error(plan(2, 2, 2)).contains("--node-rank 2"));
    let high = LaunchPlan {
        master_port: 65534,
        ..plan(2, 1, 0)
    };
    assert!(error(high).contains("--master-port 65534"));
}
