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
use std::sync::atomic::{AtomicUsize, Ordering};

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
    // Each slot is taken by exactly one thread: the one that claimed its index.
    let inputs: Vec<Mutex<Option<G>>> = groups.into_iter().map(|g| Mutex::new(Some(g))).collect();
    let outputs: Vec<Mutex<Option<Result<T, String>>>> =
        (0..count).map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    let run = || {
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            if i >= count {
                return;
            }
            let group = take(&inputs[i]).expect("each group is claimed once");
            let result = std::panic::catch_unwind(AssertUnwindSafe(|| f(group)))
                .map_err(|payload| panic_message(payload.as_ref()))
                .and_then(|value| {
                    B::sync(device)
                        .map(|()| value)
                        .map_err(|e| format!("synchronising its stream failed: {e:?}"))
                });
            *outputs[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(result);
        }
    };
    std::thread::scope(|scope| {
        for s in 0..streams.clamp(1, count.max(1)) {
            std::thread::Builder::new()
                .name(format!("burnacc-multi-apply-{s}"))
                .spawn_scoped(scope, run)
                .expect("spawning a multi_apply thread");
        }
    });
    let mut results = Vec::with_capacity(count);
    let mut failed = Vec::new();
    for (i, output) in outputs.iter().enumerate() {
        match take(output).expect("every group ran") {
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

fn take<V>(slot: &Mutex<Option<V>>) -> Option<V> {
    slot.lock().unwrap_or_else(|e| e.into_inner()).take()
}

/// The text of a panic payload (`panic!` with a literal or a formatted message).
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_owned())
}
