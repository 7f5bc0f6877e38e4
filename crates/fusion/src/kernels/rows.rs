//! Row loops shared by the CPU kernels: rows spread over the cores in fixed chunks, and sums
//! with independent partial accumulators.

use rayon::prelude::*;

/// Elements a parallel task covers at least: enough that task overhead (≈ 1 µs) stays near
/// 1 %, few enough to balance two to a few dozen cores.
pub const TASK_ELEMENTS: usize = 1 << 14;

/// Rows of `width` elements per parallel task (at least one).
pub fn rows_per_task(width: usize) -> usize {
    (TASK_ELEMENTS / width.max(1)).max(1)
}

/// Partial sums kept apart in a sum: independent additions the CPU pipelines (and the
/// compiler vectorises) instead of one chain of dependent ones.
const LANES: usize = 8;

/// `Σ_{i < n} term(i)` in f32, over [`LANES`] interleaved partial sums added at the end.
#[inline(always)]
pub fn sum_by(n: usize, term: impl Fn(usize) -> f32) -> f32 {
    let mut acc = [0f32; LANES];
    let full = n - n % LANES;
    let mut i = 0;
    while i < full {
        for (lane, a) in acc.iter_mut().enumerate() {
            *a += term(i + lane);
        }
        i += LANES;
    }
    let mut tail = 0f32;
    for j in full..n {
        tail += term(j);
    }
    acc.iter().sum::<f32>() + tail
}

/// Runs `task(first_row, rows)` over `out` cut into chunks of `rows_per_task` rows of
/// `width` elements, in parallel, and returns each task's result in row order. The chunks
/// depend on the shape only, so results combined in that order do not depend on the number
/// of threads.
pub fn for_each_row_chunk<T: Send>(
    out: &mut [f32],
    width: usize,
    rows_per_task: usize,
    task: impl Fn(usize, &mut [f32]) -> T + Sync,
) -> Vec<T> {
    if out.is_empty() || width == 0 {
        // No rows, or rows of nothing: no task (a chunk size of 0 is not one).
        return Vec::new();
    }
    out.par_chunks_mut(width * rows_per_task)
        .enumerate()
        .map(|(chunk, rows)| task(chunk * rows_per_task, rows))
        .collect()
}

/// `Σ` of per-task vectors of one length, added in task order.
pub fn add_partials(partials: impl IntoIterator<Item = Vec<f32>>, len: usize) -> Vec<f32> {
    let mut total = vec![0f32; len];
    for partial in partials {
        total.iter_mut().zip(&partial).for_each(|(t, p)| *t += p);
    }
    total
}
