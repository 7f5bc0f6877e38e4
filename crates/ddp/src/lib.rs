//! Distributed data-parallel training (PyTorch's `DistributedDataParallel`, TorchAcc's data
//! parallelism) on Burn 0.21's collective engine, `burn-collective`: no transport of our own.
//!
//! - [`Peer`]: one replica's membership of the collective (rank, world, bounded waits);
//! - [`Peer::all_reduce_gradients`]: averages a step's gradients over the peers, in the
//!   model's parameter order, flattened into buckets of at most `bucket_bytes`;
//! - [`Peer::check_parameters_agree`]: the start-of-training check that every peer holds the
//!   same weights (all peers seed alike instead of broadcasting them);
//! - [`run_local_peers`]: `world` peers as threads of this process;
//! - [`ProcessGroup`] and [`Peer::join_process`]: one peer per process, the processes meeting
//!   at rank 0's orchestrator (what `launch` starts, with `torchrun`'s environment variables).
//!
//! Every collective call is bounded by the peer's timeout: a peer that never arrives or dies
//! ends the others' waits with [`DdpError::Timeout`] instead of a hang (burn-collective itself
//! waits forever).

mod error;
mod fingerprint;
mod grads;
mod local;
mod peer;
mod process;
mod timeout;

pub use error::DdpError;
pub use local::run_local_peers;
pub use peer::{DEFAULT_BUCKET_BYTES, DEFAULT_TIMEOUT, Peer, PeerConfig};
pub use process::{ProcessGroup, env};
