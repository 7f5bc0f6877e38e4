//! Bounded waits: burn-collective blocks until every peer takes part, with no timeout, so each
//! call runs on a helper thread that the caller waits for at most `timeout`.

use std::sync::mpsc::{RecvTimeoutError, channel};
use std::time::Duration;

/// Why a bounded call did not return a value.
pub(crate) enum Unfinished {
    /// It was still running after the timeout (the helper thread is left blocked).
    TimedOut,
    /// It panicked.
    Panicked,
}

/// Runs `call` on a helper thread and waits at most `timeout` for its result.
pub(crate) fn bounded<T: Send + 'static>(
    timeout: Duration,
    call: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Unfinished> {
    let (tx, rx) = channel();
    std::thread::Builder::new()
        .name("ddp-collective".into())
        .spawn(move || {
            // The receiver is gone only when the caller already gave up.
            let _ = tx.send(call());
        })
        .expect("spawning a thread");
    match rx.recv_timeout(timeout) {
        Ok(value) => Ok(value),
        Err(RecvTimeoutError::Timeout) => Err(Unfinished::TimedOut),
        Err(RecvTimeoutError::Disconnected) => Err(Unfinished::Panicked),
    }
}
