//! Helpers of tests that run several processes: free loopback ports, bounded waits.

use std::net::TcpListener;
use std::process::{Child, ExitStatus};
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::{Duration, Instant};

/// Tests of one process take different blocks.
static NEXT_BLOCK: AtomicU16 = AtomicU16::new(0);

/// The first of `count` consecutive ports that are free now, below the ephemeral range
/// (< 32768), so that the outgoing connections of other programs cannot take them meanwhile.
/// Blocks depend on the process id, so test binaries running at once pick different ones.
pub fn free_port_block(count: u16) -> u16 {
    const LOW: u32 = 20_000;
    const HIGH: u32 = 32_000;
    let span = (HIGH - LOW) / u32::from(count);
    let start = std::process::id().wrapping_mul(7919);
    for _ in 0..span {
        let block = (start + u32::from(NEXT_BLOCK.fetch_add(1, Ordering::Relaxed))) % span;
        let first = (LOW + block * u32::from(count)) as u16;
        if (first..first + count).all(|p| TcpListener::bind(("0.0.0.0", p)).is_ok()) {
            return first;
        }
    }
    panic!("no block of {count} free ports between {LOW} and {HIGH}");
}

/// Waits at most `limit` for `child`; kills it and panics, naming `what`, after that.
pub fn wait_bounded(child: &mut Child, limit: Duration, what: &str) -> ExitStatus {
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("waiting for a child process") {
            return status;
        }
        if started.elapsed() > limit {
            child.kill().ok();
            panic!("{what} ran for more than {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}
