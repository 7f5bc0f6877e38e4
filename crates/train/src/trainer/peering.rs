//! How a run's replica meets the others of a data-parallel run: as one process of several
//! (`launch`), or as one thread of several in this process (`[ddp] devices`).

use crate::recipe::{DdpSection, DeviceSpec, Mode};
use crate::stack::{Stack, resolve_stack};
use anyhow::{Result, bail};
use burn::module::AutodiffModule;
use burn::tensor::backend::AutodiffBackend;
use burnacc_datasets::Shard;
use burnacc_ddp::{Peer, PeerConfig, ProcessGroup};
use std::time::Duration;

/// One replica's place in a data-parallel run.
#[derive(Clone, Copy, Debug)]
pub enum Peering<'a> {
    /// One process of several, each with its device (`launch`).
    Process(&'a ProcessGroup),
    /// One thread of several in this process, each with its device (`[ddp] devices`).
    Thread {
        /// This replica, `0..world`.
        rank: usize,
        /// Replicas in the run.
        world: usize,
    },
}

impl Peering<'_> {
    /// This replica's rank.
    pub fn rank(&self) -> usize {
        match self {
            Peering::Process(group) => group.rank,
            Peering::Thread { rank, .. } => *rank,
        }
    }

    /// Replicas in the run.
    pub fn world(&self) -> usize {
        match self {
            Peering::Process(group) => group.world,
            Peering::Thread { world, .. } => *world,
        }
    }

    /// This replica's share of the training data.
    pub fn shard(&self) -> Shard {
        Shard::new(self.rank(), self.world())
    }

    /// Joins the run with `[ddp]`'s bucket and timeout, and checks that every replica starts
    /// from the same weights as `model`.
    pub fn join<B: AutodiffBackend, M: AutodiffModule<B>>(
        &self,
        ddp: &DdpSection,
        model: &M,
        device: &B::Device,
    ) -> Result<Peer<B::InnerBackend>> {
        let config = PeerConfig {
            world: self.world(),
            timeout: Duration::from_secs_f64(ddp.timeout_secs),
            bucket_bytes: ddp.bucket.bytes().map_err(anyhow::Error::msg)? as usize,
        };
        let peer = match self {
            Peering::Process(group) => Peer::join_process(group, config, device.clone())?,
            Peering::Thread { rank, .. } => Peer::join_local(*rank, config, device.clone())?,
        };
        peer.check_parameters_agree(model, device)?;
        Ok(peer)
    }
}

/// The stacks of `[ddp] devices`, one per thread, in rank order: every device resolved with
/// `mode`, all of one backend type (burn-collective joins peers of one backend type).
pub fn resolve_devices(mode: Mode, devices: &[DeviceSpec]) -> Result<Vec<Stack>> {
    let stacks = devices
        .iter()
        .map(|&device| {
            resolve_stack(mode, device).map_err(|e| anyhow::anyhow!("key `ddp.devices`: {e}"))
        })
        .collect::<Result<Vec<_>>>()?;
    if let Some(other) = stacks.iter().find(|s| !s.same_backend(stacks[0])) {
        bail!(
            "key `ddp.devices`: every device must run one backend; {} and {} differ",
            stacks[0],
            other
        );
    }
    Ok(stacks)
}

/// The stack a process started by `launch` trains on: CUDA device `LOCAL_RANK` when the
/// recipe's device resolves to CUDA (torchrun's convention), else the recipe's stack.
pub fn process_stack(stack: Stack, group: &ProcessGroup) -> Result<Stack> {
    Ok(match stack.device() {
        DeviceSpec::Cuda(_) => resolve_stack(stack.mode(), DeviceSpec::Cuda(group.local_rank))
            .map_err(|e| anyhow::anyhow!("LOCAL_RANK {}: {e}", group.local_rank))?,
        _ => stack,
    })
}
