//! [`ProcessGroup`]: where the processes of a multi-process run meet, read from the environment
//! `launch` (or `torchrun`'s conventions) sets, and the orchestrator that rank 0 serves.
//!
//! Every process is one node of burn-collective with one device. Rank 0 serves the global
//! orchestrator on `MASTER_ADDR:MASTER_PORT`; each rank serves its tensors on its own data port,
//! `MASTER_PORT + 1 + RANK`, at `BURNACC_NODE_ADDR` (the address the other processes reach it
//! at; loopback when unset).

use std::net::TcpListener;

use crate::error::DdpError;

/// Environment variables of a process of a multi-process run (the names `torchrun` sets).
pub mod env {
    /// Global rank, `0..WORLD_SIZE`.
    pub const RANK: &str = "RANK";
    /// Processes in the run, over all nodes.
    pub const WORLD_SIZE: &str = "WORLD_SIZE";
    /// Rank among the processes of this machine (its device index).
    pub const LOCAL_RANK: &str = "LOCAL_RANK";
    /// Host of rank 0, where the orchestrator listens.
    pub const MASTER_ADDR: &str = "MASTER_ADDR";
    /// The orchestrator's port; data ports follow it.
    pub const MASTER_PORT: &str = "MASTER_PORT";
    /// The address other processes reach this one's data port at (default `127.0.0.1`).
    pub const NODE_ADDR: &str = "BURNACC_NODE_ADDR";
}

/// One process's place in a multi-process run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcessGroup {
    /// Global rank, `0..world`.
    pub rank: usize,
    /// Processes in the run.
    pub world: usize,
    /// Rank among this machine's processes.
    pub local_rank: usize,
    /// Host of rank 0 (the orchestrator).
    pub master_addr: String,
    /// The orchestrator's port.
    pub master_port: u16,
    /// The host other processes reach this one at.
    pub node_addr: String,
}

impl ProcessGroup {
    /// The group described by the environment, or `None` when `WORLD_SIZE` is not set (a
    /// single-process run). A variable that is missing or malformed is an error naming it.
    pub fn from_env() -> Result<Option<Self>, DdpError> {
        Self::from_lookup(|key| std::env::var(key).ok())
    }

    /// [`ProcessGroup::from_env`] over any variable lookup.
    pub fn from_lookup(var: impl Fn(&str) -> Option<String>) -> Result<Option<Self>, DdpError> {
        let Some(world) = var(env::WORLD_SIZE) else {
            return Ok(None);
        };
        let number = |key: &'static str, text: Option<String>| -> Result<usize, DdpError> {
            let text = text.ok_or_else(|| DdpError::Config {
                key,
                why: format!("must be set when {} is", env::WORLD_SIZE),
            })?;
            text.trim().parse().map_err(|_| DdpError::Config {
                key,
                why: format!("`{text}` is not a whole number"),
            })
        };
        let world = number(env::WORLD_SIZE, Some(world))?;
        let rank = number(env::RANK, var(env::RANK))?;
        let local_rank = match var(env::LOCAL_RANK) {
            Some(text) => number(env::LOCAL_RANK, Some(text))?,
            None => rank,
        };
        let port = number(env::MASTER_PORT, var(env::MASTER_PORT))?;
        let group = Self {
            rank,
            world,
            local_rank,
            master_addr: var(env::MASTER_ADDR).unwrap_or_else(|| "127.0.0.1".into()),
            master_port: u16::try_from(port).map_err(|_| DdpError::Config {
                key: env::MASTER_PORT,
                why: format!("{port} is not a port"),
            })?,
            node_addr: var(env::NODE_ADDR).unwrap_or_else(|| "127.0.0.1".into()),
        };
        group.validate()?;
        Ok(Some(group))
    }

    /// Checks ranks and ports, naming the variable that is wrong.
    pub fn validate(&self) -> Result<(), DdpError> {
        if self.world == 0 {
            return Err(DdpError::Config {
                key: env::WORLD_SIZE,
                why: "at least one process".into(),
            });
        }
        if self.rank >= self.world {
            return Err(DdpError::Config {
                key: env::RANK,
                why: format!("{} is not below WORLD_SIZE = {}", self.rank, self.world),
            });
        }
        if self.master_port == 0 || u32::from(self.master_port) + self.world as u32 > 65535 {
            return Err(DdpError::Config {
                key: env::MASTER_PORT,
                why: format!(
                    "{} leaves no room for the {} data ports after it (1..=65535)",
                    self.master_port, self.world
                ),
            });
        }
        Ok(())
    }

    /// The port this process serves its tensors on: `MASTER_PORT + 1 + RANK`.
    pub fn data_port(&self) -> u16 {
        self.master_port + 1 + self.rank as u16
    }

    /// The variables that describe this process to a child, as `launch` sets them.
    pub fn to_env(&self) -> Vec<(&'static str, String)> {
        vec![
            (env::RANK, self.rank.to_string()),
            (env::WORLD_SIZE, self.world.to_string()),
            (env::LOCAL_RANK, self.local_rank.to_string()),
            (env::MASTER_ADDR, self.master_addr.clone()),
            (env::MASTER_PORT, self.master_port.to_string()),
            (env::NODE_ADDR, self.node_addr.clone()),
        ]
    }

    /// `ws://MASTER_ADDR:MASTER_PORT`.
    pub(crate) fn orchestrator_url(&self) -> String {
        format!("ws://{}:{}", self.master_addr, self.master_port)
    }

    /// `ws://NODE_ADDR:data_port`.
    pub(crate) fn node_url(&self) -> String {
        format!("ws://{}:{}", self.node_addr, self.data_port())
    }
}

/// Errors now, naming `key`, if `port` cannot be listened on (the engine's servers would fail
/// later in the background, leaving the peers to time out).
pub(crate) fn check_port_free(port: u16, key: &'static str) -> Result<(), DdpError> {
    TcpListener::bind(("0.0.0.0", port))
        .map(drop)
        .map_err(|error| DdpError::Config {
            key,
            why: format!("cannot listen on port {port}: {error}"),
        })
}

/// Installs a WARN-level log subscriber unless one is set: burn-communication's servers
/// otherwise install one at INFO, which prints a line per tensor transfer.
pub(crate) fn quiet_engine_logs() {
    use tracing_subscriber::filter::LevelFilter;
    use tracing_subscriber::{Layer, layer::SubscriberExt, util::SubscriberInitExt};
    let layer = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_filter(LevelFilter::WARN);
    let _ = tracing_subscriber::registry().with(layer).try_init();
}

/// Serves burn-collective's global orchestrator on `port` for the rest of the process's life,
/// on a thread with its own runtime. Errors first if the port is taken.
pub(crate) fn start_orchestrator(port: u16) -> Result<(), DdpError> {
    check_port_free(port, env::MASTER_PORT)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .map_err(|error| DdpError::Config {
            key: env::MASTER_PORT,
            why: format!("cannot start the orchestrator's runtime: {error}"),
        })?;
    std::thread::Builder::new()
        .name("ddp-orchestrator".into())
        .spawn(move || runtime.block_on(burn_collective::start_global_orchestrator(port)))
        .expect("spawning a thread");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn lookup(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |key| map.get(key).cloned()
    }

    #[test]
    fn reads_the_torchrun_variables_and_names_the_bad_one() {
        assert_eq!(ProcessGroup::from_lookup(lookup(&[])).unwrap(), None);
        let group = ProcessGroup::from_lookup(lookup(&[
            ("WORLD_SIZE", "2"),
            ("RANK", "1"),
            ("MASTER_PORT", "29500"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!((group.rank, group.world, group.local_rank), (1, 2, 1));
        assert_eq!(group.data_port(), 29502);
        assert_eq!(group.orchestrator_url(), "ws://127.0.0.1:29500");
        let vars = group.to_env();
        let back: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
        assert_eq!(
            ProcessGroup::from_lookup(lookup(&back)).unwrap(),
            Some(group)
        );

        let error = |vars: &[(&str, &str)]| {
            ProcessGroup::from_lookup(lookup(vars))
                .unwrap_err()
                .to_string()
        };
        assert!(error(&[("WORLD_SIZE", "2"), ("MASTER_PORT", "1")]).contains("RANK"));
        assert!(
            error(&[("WORLD_SIZE", "2"), ("RANK", "2"), ("MASTER_PORT", "29500")])
                .contains("RANK: 2 is not below")
        );
        assert!(error(&[("WORLD_SIZE", "x"), ("RANK", "0")]).contains("WORLD_SIZE: `x`"));
        assert!(
            error(&[("WORLD_SIZE", "2"), ("RANK", "0"), ("MASTER_PORT", "65535")])
                .contains("MASTER_PORT")
        );
    }

    #[test]
    fn a_taken_port_is_named() {
        let taken = TcpListener::bind(("0.0.0.0", 0)).unwrap();
        let port = taken.local_addr().unwrap().port();
        let message = check_port_free(port, env::MASTER_PORT)
            .unwrap_err()
            .to_string();
        assert!(message.contains(&format!("MASTER_PORT: cannot listen on port {port}")));
    }
}
