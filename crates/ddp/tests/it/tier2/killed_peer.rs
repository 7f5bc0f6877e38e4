//! A peer that dies mid-run ends the other peer's next all-reduce with a timeout error naming
//! the operation, within the timeout, instead of a hang.

use std::time::{Duration, Instant};

use burn::backend::Flex;
use burn::tensor::Tensor;
use burnacc_ddp::{DdpError, PeerConfig, run_local_peers};

#[test]
fn a_dead_peer_is_an_error_within_the_timeout() {
    let timeout = Duration::from_secs(2);
    let config = PeerConfig {
        timeout,
        ..PeerConfig::new(2)
    };
    let started = Instant::now();
    let results = run_local_peers::<Flex, _, _>(config, vec![Default::default(); 2], |peer| {
        let ones = Tensor::<Flex, 1>::ones([4], &Default::default());
        // One step together.
        let sum = peer.all_reduce_sum(ones.clone())?;
        assert_eq!(sum.into_data().to_vec::<f32>().unwrap(), vec![2.0; 4]);
        if peer.rank() == 1 {
            panic!("rank 1 dies");
        }
        // Rank 0's next step waits for a peer that is gone.
        peer.all_reduce_sum(ones)?;
        Ok(())
    });
    let elapsed = started.elapsed();
    match &results[0] {
        Err(DdpError::Timeout { op, rank: 0, .. }) => assert_eq!(*op, "all_reduce"),
        other => panic!("rank 0: {other:?}"),
    }
    assert!(results[1].is_err(), "rank 1 panicked");
    assert!(
        elapsed < timeout * 5,
        "the error took {elapsed:?} with a {timeout:?} timeout"
    );
    let message = results[0].as_ref().unwrap_err().to_string();
    assert!(message.contains("timed out after 2s"), "{message}");
}
