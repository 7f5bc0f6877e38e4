//! A peer that never joins ends the others' join with a timeout error, never a hang.

use std::time::{Duration, Instant};

use burn::backend::Flex;
use burnacc_ddp::{DdpError, Peer, PeerConfig};

#[test]
fn a_peer_that_never_joins_is_an_error_within_the_timeout() {
    let timeout = Duration::from_secs(1);
    let config = PeerConfig {
        timeout,
        ..PeerConfig::new(2)
    };
    let started = Instant::now();
    // Rank 1 of 2 never starts.
    let err = Peer::<Flex>::join_local(0, config, Default::default()).unwrap_err();
    assert!(started.elapsed() < timeout * 5, "{:?}", started.elapsed());
    assert!(
        matches!(
            err,
            DdpError::Timeout {
                op: "register",
                rank: 0,
                world: 2,
                ..
            }
        ),
        "{err}"
    );

    // Bad settings are named before anything waits.
    let err = Peer::<Flex>::join_local(2, PeerConfig::new(2), Default::default()).unwrap_err();
    assert!(err.to_string().contains("rank 2"), "{err}");
    let zero = PeerConfig {
        timeout: Duration::ZERO,
        ..PeerConfig::new(2)
    };
    let err = Peer::<Flex>::join_local(0, zero, Default::default()).unwrap_err();
    assert!(err.to_string().contains("timeout"), "{err}");
}
