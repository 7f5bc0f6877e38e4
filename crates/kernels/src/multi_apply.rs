//! mmdet's `multi_apply` and TorchAcc's multi-stream variant: one function applied to several
//! groups of tensors (e.g. the feature levels of a detection head), the results in the groups'
//! order.
//!
//! [`multi_apply_multi_stream`] runs the groups on up to `streams` threads at once. A CubeCL
//! device gives each thread a stream of its own in Burn 0.21 (wgpu, CUDA: kernels of different
//! groups can overlap on the device); on the CPU the groups run on separate cores. Each thread
//! synchronises its own stream after each group: Burn's fusion records ops lazily per stream
//! and `Backend::sync` drains only the calling thread's, so without it a group's kernels would
//! run later, on whichever thread first reads its results, and nothing would overlap. Each
//! group runs exactly the ops [`multi_apply`] runs for it, so the results are equal, bit for
//! bit. A panic (or a failed synchronisation) in one group does not lose the others: every
//! group finishes, and the error lists each group that failed with its message.

use burn::tensor::backend::Backend;
use std::panic::AssertUnwindSafe;
use std::sync::Mutex;

/// Groups that failed in [`multi_apply_multi_stream`], by index, with their messages.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("multi_apply: {} of {groups} groups failed: {}", failed.len(), describe(failed))]
pub struct MultiApplyError {
    /// Groups given.
    pub groups: usize,
    /// `(group index, message)` of each group that panicked or whose stream failed to
    /// synchronise, by index.
    pub failed: Vec<(usize, String)>,
}

fn describe(failed: &[(usize, String)]) -> String {
    failed
        .iter()
        .map(|(group, message)| format!("group {group}: {message}"))
        .collect::<Vec<_>>()
        .join("; ")
}

/// `f` applied to each group in turn, on the calling thread: the results in order.
pub fn multi_apply<G, T>(f: impl Fn(G) -> T, groups: Vec<G>) -> Vec<T> {
    groups.into_iter().map(f).collect()
}

/// `f` applied to each group, up to `streams` groups at once on threads of their own (streams
/// of their own on CubeCL devices), each thread synchronising `device` (its stream) after each
/// group; the results in the groups' order, equal to [`multi_apply`]'s. `streams` is at least
/// 1 (0 is taken as 1); one stream runs the groups in turn on one thread.
///
/// Errors with every group that failed, after all groups have finished.
pub fn multi_apply_multi_stream<B, G, T>(
    f: impl Fn(G) -> T + Sync,
    streams: usize,
    groups: Vec<G>,
    device: &B::Device,
) -> Result<Vec<T>, MultiApplyError>
where
    B: Backend,
    G: Send,
    T: Send,
{
    let count = groups.len();
    // The groups not yet claimed, with their indices; each thread returns what it ran.
    let queue = Mutex::new(groups.into_iter().enumerate());
    let run = || {
        let mut ran = Vec::new();
        // The lock is released before the group runs.
        while let Some((i, group)) = next(&queue) {
            let result = std::panic::catch_unwind(AssertUnwindSafe(|| f(group)))
                .map_err(|payload| panic_message(payload.as_ref()))
                .and_then(|value| {
                    B::sync(device)
                        .map(|()| value)
                        .map_err(|e| format!("synchronising its stream failed: {e:?}"))
                });
            ran.push((i, result));
        }
        ran
    };
    let mut outputs: Vec<(usize, Result<T, String>)> = std::thread::scope(|scope| {
        let threads: Vec<_> = (0..streams.clamp(1, count.max(1)))
            .map(|s| {
                std::thread::Builder::new()
                    .name(format!("burnacc-multi-apply-{s}"))
                    .spawn_scoped(scope, run)
                    .expect("spawning a multi_apply thread")
            })
            .collect();
        threads
            .into_iter()
            .flat_map(|t| t.join().expect("panics of a group are caught"))
            .collect()
    });
    outputs.sort_by_key(|&(i, _)| i);
    let mut results = Vec::with_capacity(count);
    let mut failed = Vec::new();
    for (i, output) in outputs {
        match output {
            Ok(value) => results.push(value),
            Err(message) => failed.push((i, message)),
        }
    }
    if failed.is_empty() {
        Ok(results)
    } else {
        Err(MultiApplyError {
            groups: count,
            failed,
        })
    }
}

fn next<I: Iterator>(queue: &Mutex<I>) -> Option<I::Item> {
    queue.lock().unwrap_or_else(|e| e.into_inner()).next()
}

/// The text of a panic payload (`panic!` with a literal or a formatted message).
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_owned())
}
