//! [`run_local_peers`]: a data-parallel run's peers as threads of this process.

use std::sync::Mutex;

use burn::tensor::backend::Backend;

use crate::error::DdpError;
use crate::peer::{Peer, PeerConfig};

/// burn-collective's in-process state is global (one per backend type), so two local runs in
/// one process would register the same ranks: runs take turns.
static LOCAL_RUN: Mutex<()> = Mutex::new(());

/// Runs `work` on `config.world` peers, one thread each, every one joined to the collective on
/// its device of `devices` (one per rank), and returns each rank's result in rank order. Each
/// peer leaves the collective after `work` returns, whether it succeeded or not; a peer that
/// panics makes the others' next collective operation fail after the timeout instead of
/// hanging. Local runs of one process take turns.
pub fn run_local_peers<B, T, F>(
    config: PeerConfig,
    devices: Vec<B::Device>,
    work: F,
) -> Vec<Result<T, DdpError>>
where
    B: Backend,
    B::Device: Send + 'static,
    T: Send,
    F: Fn(&Peer<B>) -> Result<T, DdpError> + Sync,
{
    assert_eq!(
        devices.len(),
        config.world,
        "run_local_peers: one device per peer"
    );
    let _turn = LOCAL_RUN.lock().unwrap_or_else(|e| e.into_inner());
    std::thread::scope(|scope| {
        let handles: Vec<_> = devices
            .into_iter()
            .enumerate()
            .map(|(rank, device)| {
                let (config, work) = (config.clone(), &work);
                scope.spawn(move || {
                    let peer = Peer::<B>::join_local(rank, config, device)?;
                    let result = work(&peer);
                    let finished = peer.finish();
                    let result = result?;
                    finished.map(|()| result)
                })
            })
            .collect();
        handles
            .into_iter()
            .enumerate()
            .map(|(rank, handle)| {
                handle.join().unwrap_or_else(|_| {
                    Err(DdpError::Collective {
                        op: "run",
                        rank,
                        world: config.world,
                        detail: "the peer's thread panicked".into(),
                    })
                })
            })
            .collect()
    })
}
