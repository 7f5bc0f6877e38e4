//! Walking several strided operands of one output shape, row by row, in parallel.
//!
//! An element-wise op over operands that broadcast (`x: [N, C, H, W] − mean: [1, C, 1, 1]`)
//! or are strided views (`swap_dims`, `permute`, `narrow`) reads each operand at
//! `offset + Σ index[d] · stride[d]`, with stride 0 on broadcast dimensions. Flex walks such
//! operands one element at a time with an odometer over every dimension; here the dimensions
//! are first *coalesced* (adjacent dimensions that every operand walks as one merge into one,
//! as NumPy's iterator and PyTorch's TensorIterator do), so the innermost dimension becomes a
//! long *row* that every operand reads with one fixed stride (typically 1 or 0: a contiguous
//! run or a broadcast scalar). The odometer then advances once per row, and rows are spread
//! over the cores.
//!
//! For the example above the plan is `[N·C] rows × [H·W]`, reading `x` with stride 1 and
//! `mean` with stride 0 within a row.

use burn::backend::flex::Layout;
use rayon::prelude::*;

/// Output elements a parallel task covers at least: small enough to balance two to a few
/// dozen cores, large enough that task overhead (≈ 1 µs) stays below 1 %.
pub const TASK_ELEMENTS: usize = 1 << 15;

/// How to walk `K` operands over a row-major output of one shape.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StridedPlan<const K: usize> {
    /// Coalesced outer dimensions (outermost first); their product is the number of rows.
    outer: Vec<usize>,
    /// Stride of each operand along each outer dimension, in elements.
    outer_strides: [Vec<isize>; K],
    /// Elements per row (the coalesced innermost dimension; 1 for a scalar output).
    row: usize,
    /// Stride of each operand within a row.
    row_strides: [isize; K],
    /// Element offset of each operand's first element.
    offsets: [usize; K],
}

impl<const K: usize> StridedPlan<K> {
    /// The plan for `shape` (the output's) read through `layouts`, each of `shape` or
    /// broadcastable to it (same rank; size 1 or equal per dimension).
    pub fn new(shape: &[usize], layouts: [&Layout; K]) -> Self {
        let strides: Vec<Vec<isize>> = layouts
            .iter()
            .enumerate()
            .map(|(k, layout)| broadcast_strides(shape, layout, k))
            .collect();
        let offsets = std::array::from_fn(|k| layouts[k].start_offset());
        let mut merged: Vec<(usize, [isize; K])> = coalesce(shape, &strides)
            .into_iter()
            .map(|(size, s)| (size, std::array::from_fn(|k| s[k])))
            .collect();
        let (row, row_strides) = merged.pop().unwrap_or((1, [0; K]));
        let outer: Vec<usize> = merged.iter().map(|(size, _)| *size).collect();
        let outer_strides = std::array::from_fn(|k| merged.iter().map(|(_, s)| s[k]).collect());
        Self {
            outer,
            outer_strides,
            row,
            row_strides,
            offsets,
        }
    }

    /// Elements per row.
    pub fn row_len(&self) -> usize {
        self.row
    }

    /// Stride of each operand within a row.
    pub fn row_strides(&self) -> [isize; K] {
        self.row_strides
    }

    /// Dimensions after coalescing, the row included (0 for a scalar).
    pub fn rank(&self) -> usize {
        self.outer.len() + usize::from(self.row > 1 || !self.outer.is_empty())
    }

    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.outer.iter().product()
    }

    /// Element offset of each operand at the start of row `r`.
    pub fn row_offsets(&self, r: usize) -> [usize; K] {
        let mut offsets = self.offsets.map(|o| o as isize);
        let mut rest = r;
        for d in (0..self.outer.len()).rev() {
            let i = (rest % self.outer[d]) as isize;
            rest /= self.outer[d];
            for (k, offset) in offsets.iter_mut().enumerate() {
                *offset += i * self.outer_strides[k][d];
            }
        }
        offsets.map(|o| o as usize)
    }

    /// Runs `body(out_row, offsets)` for every row, in parallel over groups of rows: `out_row`
    /// is the row's slice of `out` (row-major, `rows() · row_len()` elements) and `offsets`
    /// the element offset of each operand at the row's start.
    pub fn for_each_row<T, F>(&self, out: &mut [T], body: F)
    where
        T: Send,
        F: Fn(&mut [T], [usize; K]) + Sync,
    {
        let row = self.row;
        assert_eq!(out.len(), self.rows() * row, "strided plan: output length");
        if out.is_empty() {
            return;
        }
        let rows_per_task = TASK_ELEMENTS.div_ceil(row).max(1);
        if out.len() <= rows_per_task * row {
            // One task: run it here rather than wake a worker and wait for it.
            for (i, out_row) in out.chunks_mut(row).enumerate() {
                body(out_row, self.row_offsets(i));
            }
            return;
        }
        out.par_chunks_mut(rows_per_task * row)
            .enumerate()
            .for_each(|(task, chunk)| {
                let first = task * rows_per_task;
                for (i, out_row) in chunk.chunks_mut(row).enumerate() {
                    body(out_row, self.row_offsets(first + i));
                }
            });
    }
}

/// The strides of operand `k` (of `layout`) walked over an output of `shape`: its own, and 0 on
/// the dimensions where it has size 1 (broadcast). Same rank, size 1 or equal per dimension.
pub fn broadcast_strides(shape: &[usize], layout: &Layout, k: usize) -> Vec<isize> {
    let rank = shape.len();
    assert_eq!(
        layout.num_dims(),
        rank,
        "strided plan: operand {k} of rank {} for an output of rank {rank}",
        layout.num_dims()
    );
    (0..rank)
        .map(|d| {
            let size = layout.shape()[d];
            assert!(
                size == shape[d] || size == 1,
                "strided plan: operand {k} of size {size} on dimension {d} does not broadcast to {}",
                shape[d]
            );
            if size == 1 { 0 } else { layout.strides()[d] }
        })
        .collect()
}

/// The dimensions of `shape` as the operands walk them, outermost first, each with every
/// operand's stride (`strides[k][d]`): dimensions of size 1 dropped, and each dimension merged
/// into the next inner one when every operand steps over the inner one exactly
/// (`stride_outer = stride_inner · size_inner`).
pub fn coalesce(shape: &[usize], strides: &[Vec<isize>]) -> Vec<(usize, Vec<isize>)> {
    let mut merged: Vec<(usize, Vec<isize>)> = Vec::with_capacity(shape.len());
    for (d, &size) in shape.iter().enumerate() {
        if size == 1 {
            continue;
        }
        let s: Vec<isize> = strides.iter().map(|operand| operand[d]).collect();
        if let Some((prev_size, prev)) = merged.last_mut()
            && prev.iter().zip(&s).all(|(&p, &i)| p == i * size as isize)
        {
            *prev_size *= size;
            *prev = s;
            continue;
        }
        merged.push((size, s));
    }
    merged
}

/// The shape two operands broadcast to (same rank), or `None` when they do not.
pub fn broadcast_shape(a: &[usize], b: &[usize]) -> Option<Vec<usize>> {
    if a.len() != b.len() {
        return None;
    }
    a.iter()
        .zip(b)
        .map(|(&x, &y)| match (x, y) {
            _ if x == y => Some(x),
            (1, y) => Some(y),
            (x, 1) => Some(x),
            _ => None,
        })
        .collect()
}
