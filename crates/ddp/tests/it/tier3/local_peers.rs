//! Two peers as threads on the CPU train exactly as one device on the joined batch: the same
//! averaged gradients (rel ≤ 1e-5) and, after three steps of SGD with momentum, the same
//! weights; peers that start from different weights are refused.

use crate::common::*;
use burn::backend::Flex;
use burnacc_ddp::{DdpError, PeerConfig, run_local_peers};

#[test]
fn two_thread_peers_train_like_one_device_on_the_joined_batch() {
    let device = Default::default();
    let start = model(&device);
    let (one_grad, one_weights) = train(start.clone(), |m| Ok(gradients(m, 0..ROWS))).unwrap();

    // Small buckets: the 4 parameters go in 3 all-reduce calls.
    let config = PeerConfig {
        bucket_bytes: 400,
        ..PeerConfig::new(2)
    };
    let results = run_local_peers::<Flex, _, _>(config, vec![device; 2], |peer| {
        peer.check_parameters_agree(&start, &Default::default())?;
        let half = ROWS / 2;
        let rows = peer.rank() * half..(peer.rank() + 1) * half;
        train(start.clone(), |m| {
            peer.all_reduce_gradients::<B, _>(m, gradients(m, rows.clone()))
        })
    });
    let peers: Vec<_> = results.into_iter().map(Result::unwrap).collect();
    for (rank, (grad, weights)) in peers.iter().enumerate() {
        let (g, w) = (max_rel(grad, &one_grad), max_rel(weights, &one_weights));
        println!("rank {rank}: gradient rel {g:.2e}, weights after {STEPS} steps rel {w:.2e}");
        assert!(g <= 1e-5 && w <= 1e-5, "rank {rank}: {g:e}, {w:e}");
    }
    assert_eq!(peers[0], peers[1], "the peers diverged");

    // The comparison can fail: one half of the batch alone gives other gradients.
    let half = first_weight_grad(&start, &gradients(&start, 0..ROWS / 2));
    assert!(max_rel(&half, &one_grad) > 1e-3);
}

#[test]
fn peers_with_different_weights_are_refused() {
    let device = Default::default();
    let start = model(&device);
    let results = run_local_peers::<Flex, _, _>(PeerConfig::new(2), vec![device; 2], |peer| {
        let model = if peer.rank() == 1 {
            // Another seed: other initial weights.
            Mlp::<B>::new(&Default::default())
        } else {
            start.clone()
        };
        peer.check_parameters_agree(&model, &Default::default())
    });
    for (rank, result) in results.into_iter().enumerate() {
        let err = result.expect_err("different weights must be refused");
        assert!(
            matches!(err, DdpError::ParametersDiffer { .. }),
            "rank {rank}: {err}"
        );
    }
}
