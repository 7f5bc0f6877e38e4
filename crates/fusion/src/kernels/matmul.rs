//! f32 batched matrix products on strided operands through the `gemm` crate (Flex's own GEMM),
//! written into a fresh output buffer that is neither zero-filled nor copied.
//!
//! Flex allocates every product's output with `FlexTensor::empty`: a zeroed `Vec<u8>` that
//! `Bytes` then copies into a 16-byte-aligned allocation, so each output is written three times
//! (zeroing, copy, product) and allocated twice. Here the product is the only write.
//!
//! Shapes: `lhs [b…, M, K] · rhs [b…, K, N] → [b…, M, N]`, batch dimensions broadcast as in
//! Burn (size 1 against any size, missing leading dimensions as size 1); any strides.

// `gemm` is an unsafe interface (raw pointers and strides), and the output is written
// uninitialised on purpose; each `unsafe` block states why it is sound.
#![allow(unsafe_code)]

use burn::backend::flex::{FlexTensor, Layout};
use burn::tensor::{Bytes, DType, Shape};
use rayon::prelude::*;

/// Multiply-adds of one product above which the product itself is split over the cores
/// (Flex's threshold, 192³).
const PARALLEL_PRODUCT: usize = 192 * 192 * 192;

/// Multiply-adds of a whole batch above which its products run in parallel, one per task
/// (Flex's threshold, 128³).
const PARALLEL_BATCH: usize = 128 * 128 * 128;

/// One operand's matrix in memory: where each batch's matrix starts, and the row and column
/// strides, in elements.
struct Operand<'a> {
    data: &'a [f32],
    start: isize,
    batch_strides: Vec<isize>,
    row_stride: isize,
    col_stride: isize,
}

impl<'a> Operand<'a> {
    /// `t`'s matrices as seen from the output's `batch` dimensions (size-1 or missing
    /// dimensions of `t` repeat: stride 0).
    fn new(t: &'a FlexTensor, batch: &[usize]) -> Self {
        let layout = t.layout();
        let (shape, strides) = (layout.shape(), layout.strides());
        let rank = shape.num_dims();
        let own = rank - 2;
        let missing = batch.len() - own;
        let batch_strides = (0..batch.len())
            .map(|d| match d.checked_sub(missing) {
                Some(i) if shape[i] != 1 => strides[i],
                _ => 0,
            })
            .collect();
        Self {
            data: t.storage(),
            start: layout.start_offset() as isize,
            batch_strides,
            row_stride: strides[rank - 2],
            col_stride: strides[rank - 1],
        }
    }

    /// Offset of the matrix of flat batch index `b` (row-major over `batch`).
    fn offset(&self, mut b: usize, batch: &[usize]) -> isize {
        let mut offset = self.start;
        for (d, &size) in batch.iter().enumerate().rev() {
            offset += (b % size) as isize * self.batch_strides[d];
            b /= size;
        }
        offset
    }
}

/// `lhs · rhs` for f32 tensors of rank ≥ 2 (see the module doc for shapes); `None` for other
/// dtypes.
pub fn matmul_f32(lhs: &FlexTensor, rhs: &FlexTensor) -> Option<FlexTensor> {
    if lhs.dtype() != DType::F32 || rhs.dtype() != DType::F32 {
        return None;
    }
    let (ls, rs) = (lhs.layout().shape(), rhs.layout().shape());
    let (lr, rr) = (ls.num_dims(), rs.num_dims());
    let (m, k, n) = (ls[lr - 2], ls[lr - 1], rs[rr - 1]);
    assert_eq!(k, rs[rr - 2], "matmul: inner dimensions must match");
    let batch = broadcast_batch(&ls[..lr - 2], &rs[..rr - 2]);
    let batches: usize = batch.iter().product();
    let mut out_shape = batch.clone();
    out_shape.extend([m, n]);
    let out_shape = Shape::from(out_shape);
    let len = batches * m * n;
    if k == 0 || len == 0 {
        // Empty sums: zeros (`gemm` is not asked to write a product of nothing).
        return Some(FlexTensor::filled_typed(out_shape, DType::F32, 0f32));
    }

    let (a, b) = (Operand::new(lhs, &batch), Operand::new(rhs, &batch));
    let mut out: Vec<f32> = Vec::with_capacity(len);
    let out_ptr = SendPtr(out.as_mut_ptr());
    let matrix = m * n;
    let product = m * n * k;
    let one = |index: usize, threads: gemm::Parallelism| {
        // SAFETY: `index < batches`, so the `m × n` matrix at `index · m · n` lies inside `out`'s
        // capacity, and tasks of distinct indices write disjoint matrices. Each operand offset
        // plus its strides stays inside its tensor's storage, because the layouts are valid
        // views of that storage. `read_dst = false`: `gemm` writes every element of the
        // output matrix (k > 0) and reads none of it, so the uninitialised capacity is never
        // read.
        unsafe {
            gemm::gemm(
                m,
                n,
                k,
                out_ptr.get().add(index * matrix),
                1,
                n as isize,
                false,
                a.data.as_ptr().offset(a.offset(index, &batch)),
                a.col_stride,
                a.row_stride,
                b.data.as_ptr().offset(b.offset(index, &batch)),
                b.col_stride,
                b.row_stride,
                0f32,
                1f32,
                false,
                false,
                false,
                threads,
            );
        }
    };
    let total = batches * product;
    if batches > 1 && total >= PARALLEL_BATCH && (product < PARALLEL_PRODUCT || batches >= 4) {
        (0..batches)
            .into_par_iter()
            .for_each(|i| one(i, gemm::Parallelism::None));
    } else {
        let threads = if product >= PARALLEL_PRODUCT {
            gemm::Parallelism::Rayon(0)
        } else {
            gemm::Parallelism::None
        };
        (0..batches).for_each(|i| one(i, threads));
    }
    // SAFETY: every one of the `len` elements was written by exactly one product above.
    unsafe { out.set_len(len) };
    Some(FlexTensor::new(
        Bytes::from_elems(out),
        Layout::contiguous(out_shape),
        DType::F32,
    ))
}

/// The output's batch dimensions: `lhs` and `rhs` batch shapes right-aligned, each dimension
/// the larger of the two (one of them 1 or equal).
fn broadcast_batch(lhs: &[usize], rhs: &[usize]) -> Vec<usize> {
    let rank = lhs.len().max(rhs.len());
    let at = |s: &[usize], d: usize| d.checked_sub(rank - s.len()).map(|i| s[i]).unwrap_or(1);
    (0..rank)
        .map(|d| {
            let (l, r) = (at(lhs, d), at(rhs, d));
            assert!(
                l == r || l == 1 || r == 1,
                "matmul: batch dimensions {lhs:?} and {rhs:?} do not broadcast"
            );
            l.max(r)
        })
        .collect()
}

/// The output pointer, shared by the parallel products (each writes its own matrix).
#[derive(Clone, Copy)]
struct SendPtr(*mut f32);

// SAFETY: the products write disjoint regions of the buffer behind the pointer (see `one`).
unsafe impl Send for SendPtr {}
unsafe impl Sync for SendPtr {}

impl SendPtr {
    fn get(self) -> *mut f32 {
        self.0
    }
}
