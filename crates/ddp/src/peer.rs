//! [`Peer`]: one replica's membership of the collective, and the collective operations a
//! data-parallel step needs, each bounded by the peer's timeout.

use core::marker::PhantomData;
use std::time::Duration;

use burn::collective::{
    CollectiveConfig, CollectiveError, PeerId, ReduceOperation, all_reduce, finish_collective,
    register, reset_collective,
};
use burn::module::{AutodiffModule, Module};
use burn::optim::GradientsParams;
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::{Tensor, TensorPrimitive};
use burn_communication::Address;

use crate::error::DdpError;
use crate::fingerprint::parameter_fingerprint;
use crate::grads::{FlatGradients, take_gradients};
use crate::process::{ProcessGroup, check_port_free, quiet_engine_logs, start_orchestrator};
use crate::timeout::{Unfinished, bounded};

/// PyTorch DDP's default bucket size (`bucket_cap_mb = 25`).
pub const DEFAULT_BUCKET_BYTES: usize = 25 << 20;
/// How long a peer waits for the others in any one collective operation by default.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

/// How peers meet and exchange.
#[derive(Clone, Debug)]
pub struct PeerConfig {
    /// Number of peers.
    pub world: usize,
    /// The longest wait for the other peers in one collective operation.
    pub timeout: Duration,
    /// Gradients are all-reduced in buckets of at most this many bytes (f32).
    pub bucket_bytes: usize,
}

impl PeerConfig {
    /// `world` peers with the default timeout and bucket size.
    pub fn new(world: usize) -> Self {
        Self {
            world,
            timeout: DEFAULT_TIMEOUT,
            bucket_bytes: DEFAULT_BUCKET_BYTES,
        }
    }

    /// Checks the settings, naming the one that is invalid.
    pub fn validate(&self) -> Result<(), DdpError> {
        let invalid = |key, why: &str| {
            Err(DdpError::Config {
                key,
                why: why.into(),
            })
        };
        if self.world == 0 {
            return invalid("world", "at least one peer");
        }
        if self.timeout.is_zero() {
            return invalid("timeout", "must be positive");
        }
        if self.bucket_bytes < 4 {
            return invalid("bucket_bytes", "must hold at least one f32");
        }
        Ok(())
    }
}

/// One replica of a data-parallel run, on backend `B`: for an autodiff stack, its inner
/// backend, where gradients live (burn-collective keys its state by backend type, so every
/// peer uses the same one).
///
/// Rank 0 is the one that logs and writes (the caller's convention); the collective itself is
/// symmetric. Dropping a peer without [`Peer::finish`] leaves it registered.
#[derive(Debug)]
pub struct Peer<B: Backend> {
    rank: usize,
    /// The id burn-collective knows this peer by in its process: the rank for thread peers,
    /// 0 for a process's single peer.
    local_id: usize,
    config: PeerConfig,
    _backend: PhantomData<B>,
}

impl<B: Backend> Peer<B> {
    /// Joins the collective of `config.world` peers in this process (threads, one per rank) as
    /// `rank`, on `device`; returns once every peer has joined, or fails after the timeout.
    pub fn join_local(rank: usize, config: PeerConfig, device: B::Device) -> Result<Self, DdpError>
    where
        B::Device: Send + 'static,
    {
        config.validate()?;
        if rank >= config.world {
            return Err(DdpError::Config {
                key: "rank",
                why: format!("rank {rank} is not below the world size {}", config.world),
            });
        }
        let peer = Self {
            rank,
            local_id: rank,
            config,
            _backend: PhantomData,
        };
        if peer.config.world > 1 {
            let collective = CollectiveConfig::default().with_num_devices(peer.config.world);
            let id = peer.id();
            peer.bounded("register", move || register::<B>(id, device, collective))?;
        }
        Ok(peer)
    }

    /// Joins a run of `group.world` processes as this process's only peer, on `device`:
    /// rank 0 first serves the orchestrator on `MASTER_PORT`, every rank serves its data port
    /// (`MASTER_PORT + 1 + RANK`); returns once every process has joined, or fails after the
    /// timeout (a process that never starts). Taken ports are errors that name them. A process
    /// joins once: a failed join leaves its collective unusable, so the run must end.
    pub fn join_process(
        group: &ProcessGroup,
        mut config: PeerConfig,
        device: B::Device,
    ) -> Result<Self, DdpError>
    where
        B::Device: Send + 'static,
    {
        group.validate()?;
        config.world = group.world;
        config.validate()?;
        let peer = Self {
            rank: group.rank,
            local_id: 0,
            config,
            _backend: PhantomData,
        };
        if group.world > 1 {
            quiet_engine_logs();
            if group.rank == 0 {
                start_orchestrator(group.master_port)?;
            }
            check_port_free(group.data_port(), "data port (MASTER_PORT + 1 + RANK)")?;
            let address = |url: String| url.parse::<Address>().expect("any string is an address");
            let collective = CollectiveConfig::default()
                .with_num_devices(1)
                .with_num_nodes(group.world as u32)
                .with_global_address(address(group.orchestrator_url()))
                .with_node_address(address(group.node_url()))
                .with_data_service_port(group.data_port());
            let id = peer.id();
            peer.bounded("register", move || register::<B>(id, device, collective))
                .map_err(|error| match error {
                    DdpError::Timeout { after, .. } => DdpError::Unreachable {
                        rank: group.rank,
                        world: group.world,
                        address: group.orchestrator_url(),
                        after,
                    },
                    other => other,
                })?;
        }
        Ok(peer)
    }

    /// This peer's rank, `0..world`.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// Number of peers.
    pub fn world(&self) -> usize {
        self.config.world
    }

    /// Whether this peer is rank 0 (logs, progress and checkpoints are its alone).
    pub fn is_leader(&self) -> bool {
        self.rank == 0
    }

    fn id(&self) -> PeerId {
        PeerId::from(self.local_id)
    }

    /// Runs `call` bounded by the timeout. On a timeout the local collective is reset, which
    /// releases the other peers blocked in an all-reduce (they fail too).
    fn bounded<T: Send + 'static>(
        &self,
        op: &'static str,
        call: impl FnOnce() -> Result<T, CollectiveError> + Send + 'static,
    ) -> Result<T, DdpError> {
        let (rank, world) = (self.rank, self.config.world);
        match bounded(self.config.timeout, call) {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(error)) => Err(DdpError::Collective {
                op,
                rank,
                world,
                detail: format!("{error:?}"),
            }),
            Err(Unfinished::TimedOut) => {
                reset_collective::<B>();
                Err(DdpError::Timeout {
                    op,
                    rank,
                    world,
                    after: self.config.timeout,
                })
            }
            Err(Unfinished::Panicked) => Err(DdpError::Collective {
                op,
                rank,
                world,
                detail: "the collective engine panicked (a peer process likely died)".into(),
            }),
        }
    }

    /// The element-wise sum of `tensor` over the peers (every peer gets it).
    pub fn all_reduce_sum<const D: usize>(
        &self,
        tensor: Tensor<B, D>,
    ) -> Result<Tensor<B, D>, DdpError> {
        if self.config.world == 1 {
            return Ok(tensor);
        }
        let id = self.id();
        let primitive = tensor.into_primitive().tensor();
        let sum = self.bounded("all_reduce", move || {
            all_reduce::<B>(id, primitive, ReduceOperation::Sum)
        })?;
        Ok(Tensor::from_primitive(TensorPrimitive::Float(sum)))
    }

    /// The step's gradients averaged over the peers (PyTorch DDP's all-reduce after backward),
    /// to be applied by every peer's optimizer alike.
    ///
    /// Gradients are taken in `model`'s parameter order (the same on every peer, unlike
    /// parameter ids across processes), flattened to f32, packed into buckets of at most
    /// `bucket_bytes` (one parameter larger than that is a bucket of its own), summed over the
    /// peers one bucket per collective call, divided by the world size, and put back in their
    /// shapes and dtypes. Every peer must have gradients for the same parameters.
    ///
    /// Burn 0.21 offers no hook as each parameter's gradient is produced during backward, so
    /// the buckets are reduced after the backward pass rather than overlapped with it.
    pub fn all_reduce_gradients<AB, M>(
        &self,
        model: &M,
        grads: GradientsParams,
    ) -> Result<GradientsParams, DdpError>
    where
        AB: AutodiffBackend<InnerBackend = B>,
        M: AutodiffModule<AB>,
    {
        if self.config.world == 1 {
            return Ok(grads);
        }
        let FlatGradients {
            mut grads,
            flats,
            slots,
        } = take_gradients::<AB, M>(model, grads);
        let scale = 1.0 / self.config.world as f64;
        let mut reduced = Vec::with_capacity(flats.len());
        for bucket in crate::grads::buckets(&flats, self.config.bucket_bytes) {
            let lens: Vec<usize> = bucket.iter().map(|i| flats[*i].dims()[0]).collect();
            let joined = Tensor::cat(bucket.iter().map(|i| flats[*i].clone()).collect(), 0);
            let mean = self.all_reduce_sum(joined)?.mul_scalar(scale);
            let mut offset = 0;
            for len in lens {
                reduced.push(mean.clone().narrow(0, offset, len));
                offset += len;
            }
        }
        for (slot, flat) in slots.into_iter().zip(reduced) {
            slot.restore(&mut grads, flat);
        }
        Ok(grads)
    }

    /// Checks that every peer holds the same parameters as this one (a hash of their values in
    /// `model`'s order): the start-of-training check of peers that seed alike instead of
    /// broadcasting weights. Reads the parameters back to the host once.
    pub fn check_parameters_agree<MB: Backend, M: Module<MB>>(
        &self,
        model: &M,
        device: &B::Device,
    ) -> Result<(), DdpError> {
        if self.config.world == 1 {
            return Ok(());
        }
        // The hash as four 16-bit words, exact in f32: the sum over the peers equals world ×
        // word on every peer iff all peers hold the same word.
        let hash = parameter_fingerprint(model);
        let words: Vec<f32> = (0..4)
            .map(|i| ((hash >> (16 * i)) & 0xFFFF) as f32)
            .collect();
        let local =
            Tensor::<B, 1>::from_data(burn::tensor::TensorData::new(words.clone(), [4]), device);
        let sums: Vec<f32> = self
            .all_reduce_sum(local)?
            .into_data()
            .convert::<f32>()
            .to_vec()
            .expect("f32 data");
        let world = self.config.world as f32;
        if words.iter().zip(&sums).all(|(w, s)| w * world == *s) {
            Ok(())
        } else {
            Err(DdpError::ParametersDiffer {
                rank: self.rank,
                detail: format!("parameter hash {hash:016x}"),
            })
        }
    }

    /// Leaves the collective (after the last step).
    pub fn finish(self) -> Result<(), DdpError> {
        if self.config.world == 1 {
            return Ok(());
        }
        let id = self.id();
        self.bounded("finish", move || finish_collective::<B>(id))
    }
}
