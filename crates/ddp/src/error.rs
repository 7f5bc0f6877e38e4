//! [`DdpError`]: what can go wrong between peers.

use std::time::Duration;

/// A failed collective step.
#[derive(Debug, thiserror::Error)]
pub enum DdpError {
    /// A peer did not take part within the timeout (it never connected, stalled or died).
    #[error(
        "ddp: {op} on rank {rank} of {world} timed out after {after:?}: a peer did not take part \
         (it never started, stalled or died)"
    )]
    Timeout {
        /// The collective operation.
        op: &'static str,
        /// This peer's rank.
        rank: usize,
        /// Peers in the collective.
        world: usize,
        /// The timeout.
        after: Duration,
    },
    /// The collective engine refused or failed the operation.
    #[error("ddp: {op} on rank {rank} of {world} failed: {detail}")]
    Collective {
        /// The collective operation.
        op: &'static str,
        /// This peer's rank.
        rank: usize,
        /// Peers in the collective.
        world: usize,
        /// The engine's error.
        detail: String,
    },
    /// A process could not join its run within the timeout: the orchestrator's address is
    /// unreachable, or some process never started.
    #[error(
        "ddp: rank {rank} of {world} could not join within {after:?}: no run at {address} (is \
         MASTER_ADDR:MASTER_PORT rank 0's, and did every process start?)"
    )]
    Unreachable {
        /// This process's rank.
        rank: usize,
        /// Processes in the run.
        world: usize,
        /// The orchestrator's address.
        address: String,
        /// The timeout.
        after: Duration,
    },
    /// The peers do not hold the same parameters.
    #[error(
        "ddp: the parameters of rank {rank} differ from another peer's ({detail}); every peer \
         must start from the same seed and weights"
    )]
    ParametersDiffer {
        /// This peer's rank.
        rank: usize,
        /// What differs.
        detail: String,
    },
    /// An invalid setting.
    #[error("ddp: {key}: {why}")]
    Config {
        /// The setting.
        key: &'static str,
        /// Why it is invalid.
        why: String,
    },
}
