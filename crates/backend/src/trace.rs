//! Op spans for the profiler: while tracing is on for a thread, every op of `Acc` called on it
//! records its name and its host-side start and end.
//!
//! The time is what the call took on the host: on the CPU that is the op itself; on CubeCL
//! devices, which run asynchronously, it is the time to record or enqueue the op, and the
//! device time shows in the phase spans the trainer synchronises around. Off, an op pays one
//! thread-local flag read.

use crate::forward::OP_NAMES;
use std::cell::{Cell, RefCell};
use std::time::Instant;

thread_local! {
    static TRACING: Cell<bool> = const { Cell::new(false) };
    static SPANS: RefCell<Vec<OpSpan>> = const { RefCell::new(Vec::new()) };
}

/// One op call on the host.
#[derive(Clone, Copy, Debug)]
pub struct OpSpan {
    /// The op's name in Burn's op traits (`conv2d`, `float_add`, …).
    pub name: &'static str,
    /// When the call started.
    pub start: Instant,
    /// When it returned.
    pub end: Instant,
}

/// Starts recording the ops called on this thread (clearing what was recorded before).
pub fn start_tracing() {
    SPANS.with(|s| s.borrow_mut().clear());
    TRACING.with(|t| t.set(true));
}

/// Stops recording on this thread and returns the spans, in call order.
pub fn stop_tracing() -> Vec<OpSpan> {
    TRACING.with(|t| t.set(false));
    SPANS.with(|s| std::mem::take(&mut *s.borrow_mut()))
}

/// Records the op it was created for when dropped, if tracing is on.
pub struct SpanGuard {
    started: Option<(usize, Instant)>,
}

/// Opens the span of op `index` (an index into the op names); the returned guard closes it.
#[inline]
pub fn span(index: usize) -> SpanGuard {
    let on = TRACING.with(Cell::get);
    SpanGuard {
        started: on.then(|| (index, Instant::now())),
    }
}

impl Drop for SpanGuard {
    fn drop(&mut self) {
        if let Some((index, start)) = self.started {
            let span = OpSpan {
                name: OP_NAMES[index],
                start,
                end: Instant::now(),
            };
            SPANS.with(|s| s.borrow_mut().push(span));
        }
    }
}
