//! Per-op and per-kernel counters of `Acc<B>`.
//!
//! Counters are per thread: each thread sees the ops it issued itself. Burn backends are called
//! on the thread that builds the graph (the training loop), so a test or a trainer reads exactly
//! its own ops, and tests running side by side in one process do not disturb each other. A
//! counter is a `Cell<u64>` bump: no atomic, no lock on the op path.

use crate::forward::{OP_COUNT, OP_NAMES};
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;

thread_local! {
    static OPS: [Cell<u64>; OP_COUNT] = const { [const { Cell::new(0) }; OP_COUNT] };
    static IN_HALF: [Cell<u64>; OP_COUNT] = const { [const { Cell::new(0) }; OP_COUNT] };
    static KERNELS: RefCell<BTreeMap<&'static str, u64>> = const { RefCell::new(BTreeMap::new()) };
}

/// Counts one call of the forwarded op with index `index` (an index into [`OP_NAMES`]).
#[inline(always)]
pub fn bump(index: usize) {
    OPS.with(|ops| ops[index].set(ops[index].get() + 1));
}

/// Counts one run of op `index` whose float inputs autocast cast to `dtype`; runs in f16 or
/// bf16 are counted per op (see [`OpCounts::op_in_half`]).
#[inline]
pub fn bump_in_dtype(index: usize, dtype: burn::tensor::FloatDType) {
    if matches!(
        dtype,
        burn::tensor::FloatDType::F16 | burn::tensor::FloatDType::BF16
    ) {
        IN_HALF.with(|ops| ops[index].set(ops[index].get() + 1));
    }
}

/// Counts one launch of a fused kernel or override named `name` (e.g. `"layer_norm"`).
pub fn bump_kernel(name: &'static str) {
    KERNELS.with(|k| *k.borrow_mut().entry(name).or_insert(0) += 1);
}

/// Sets every op and kernel counter of this thread to zero.
pub fn reset() {
    OPS.with(|ops| ops.iter().for_each(|c| c.set(0)));
    IN_HALF.with(|ops| ops.iter().for_each(|c| c.set(0)));
    KERNELS.with(|k| k.borrow_mut().clear());
}

/// Index of op `name` in [`OP_NAMES`]; panics on a name that is not an op of Burn 0.21's
/// `Backend`, so that a typo in a test cannot read as "ran zero times".
fn op_index(name: &str) -> usize {
    OP_NAMES
        .iter()
        .position(|n| *n == name)
        .unwrap_or_else(|| panic!("`{name}` is not an op of Burn 0.21's Backend trait"))
}

/// A copy of this thread's counters at one moment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpCounts {
    ops: Vec<u64>,
    in_half: Vec<u64>,
    kernels: BTreeMap<&'static str, u64>,
}

/// Takes a copy of this thread's counters.
pub fn snapshot() -> OpCounts {
    OpCounts {
        ops: OPS.with(|ops| ops.iter().map(Cell::get).collect()),
        in_half: IN_HALF.with(|ops| ops.iter().map(Cell::get).collect()),
        kernels: KERNELS.with(|k| k.borrow().clone()),
    }
}

impl OpCounts {
    /// How many times the op `name` (Burn's method name, e.g. `"float_matmul"`) ran.
    ///
    /// Panics on a name that is not an op of Burn 0.21's `Backend`: a typo in a test must not
    /// read as "ran zero times".
    pub fn op(&self, name: &str) -> u64 {
        self.ops[op_index(name)]
    }

    /// How many times the op `name` ran with its inputs cast to f16 or bf16 by autocast.
    pub fn op_in_half(&self, name: &str) -> u64 {
        self.in_half[op_index(name)]
    }

    /// How many times the kernel `name` ran (zero if never).
    pub fn kernel(&self, name: &str) -> u64 {
        self.kernels.get(name).copied().unwrap_or(0)
    }

    /// Total number of forwarded op calls.
    pub fn total_ops(&self) -> u64 {
        self.ops.iter().sum()
    }

    /// Host reads: calls that move tensor data from the device to the host.
    pub fn host_reads(&self) -> u64 {
        [
            "float_into_data",
            "int_into_data",
            "bool_into_data",
            "q_into_data",
            "tr_execute",
        ]
        .iter()
        .map(|n| self.op(n))
        .sum()
    }

    /// Counters of `self` minus those of an `earlier` snapshot of the same thread.
    pub fn since(&self, earlier: &OpCounts) -> OpCounts {
        OpCounts {
            ops: self
                .ops
                .iter()
                .zip(&earlier.ops)
                .map(|(a, b)| a - b)
                .collect(),
            in_half: self
                .in_half
                .iter()
                .zip(&earlier.in_half)
                .map(|(a, b)| a - b)
                .collect(),
            kernels: self
                .kernels
                .iter()
                .map(|(k, v)| (*k, v - earlier.kernels.get(k).copied().unwrap_or(0)))
                .collect(),
        }
    }

    /// The ops that ran at least once, by name, with their counts.
    pub fn nonzero(&self) -> Vec<(&'static str, u64)> {
        OP_NAMES
            .iter()
            .zip(&self.ops)
            .filter(|(_, c)| **c > 0)
            .map(|(n, c)| (*n, *c))
            .collect()
    }
}
