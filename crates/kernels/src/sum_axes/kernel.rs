//! The CubeCL kernels of the multi-axis sum.
//!
//! Every kernel reads `input` as a strided view whose first `kept_rank` axes are the kept ones
//! (in output order) and whose remaining axes are the reduced ones, any strides (the launcher
//! permutes the view, it does not copy). Sums are accumulated in f32.

use burn::cubecl;
use cubecl::prelude::*;

use crate::cube_tree::cube_sum;

/// The f32 sum, over the cube, of the reduced elements `[first, end)` (row-major over the
/// reduced axes) at the kept coordinates of output element `position`; every unit returns it.
///
/// Each unit sums every `CUBE_DIM_X`-th element, so consecutive units read consecutive
/// elements of the innermost reduced axis; then the cube adds the partial sums as a tree.
#[cube]
fn cube_sum_of_range<F: Float>(
    input: &Tensor<F>,
    position: usize,
    first: usize,
    end: usize,
    #[comptime] kept_rank: usize,
    #[comptime] block_size: u32,
) -> f32 {
    let rank = input.rank();

    // Offset of the kept coordinates (row-major over the kept axes).
    let mut rest = position;
    let mut base = usize::new(0);
    #[unroll]
    for i in 0..kept_rank {
        let axis = kept_rank - 1 - i;
        let size = input.shape(axis);
        base += (rest % size) * input.stride(axis);
        rest /= size;
    }

    let reduced_rank = rank - kept_rank;
    let unit = UNIT_POS_X as usize;
    let mut acc = f32::new(0.0);
    let mut r = first + unit;
    while r < end {
        let mut rest = r;
        let mut offset = base;
        for i in 0..reduced_rank {
            let axis = rank - 1 - i;
            let size = input.shape(axis);
            offset += (rest % size) * input.stride(axis);
            rest /= size;
        }
        acc += f32::cast_from(input[offset]);
        r += CUBE_DIM_X as usize;
    }

    let mut partial = SharedMemory::<f32>::new(block_size as usize);
    partial[unit] = acc;
    cube_sum(&mut partial);
    partial[0]
}

/// `output[p] = scale · Σ input[kept(p), r]` over every reduced element `r`, one cube per
/// output element `p`.
///
/// - `output`: contiguous, `Π kept sizes` elements, storage `F`;
/// - `count`: the number of reduced elements (`Π reduced sizes`);
/// - `block_size`: the cube size (a power of two), which sizes the shared array.
///
/// Cubes past the output exit at once, before any barrier.
#[cube(launch)]
pub(crate) fn sum_trailing_axes_kernel<F: Float>(
    input: &Tensor<F>,
    output: &mut Tensor<F>,
    count: usize,
    scale: f32,
    #[comptime] kept_rank: usize,
    #[comptime] block_size: u32,
    #[define(F)] _dtype: StorageType,
) {
    let position = CUBE_POS;
    if position >= output.len() {
        terminate!();
    }
    let total = cube_sum_of_range::<F>(input, position, 0, count, kept_rank, block_size);
    if UNIT_POS_X == 0 {
        output[position] = F::cast_from(total * scale);
    }
}

/// The first pass of a long reduction: `partials[p · splits + s]` is the f32 sum of the `s`-th
/// run of `chunk` reduced elements of output element `p`, one cube per run, so that a few
/// outputs with many elements each still fill the device.
///
/// - `partials`: `[outputs · splits]` f32;
/// - `count`: the number of reduced elements; `chunk`: elements per run (the last may be short).
#[cube(launch)]
pub(crate) fn sum_trailing_axes_partial_kernel<F: Float>(
    input: &Tensor<F>,
    partials: &mut Tensor<f32>,
    count: usize,
    chunk: usize,
    splits: usize,
    #[comptime] kept_rank: usize,
    #[comptime] block_size: u32,
    #[define(F)] _dtype: StorageType,
) {
    let run = CUBE_POS;
    if run >= partials.len() {
        terminate!();
    }
    let first = (run % splits) * chunk;
    let mut end = first + chunk;
    if end > count {
        end = count;
    }
    let total = cube_sum_of_range::<F>(input, run / splits, first, end, kept_rank, block_size);
    if UNIT_POS_X == 0 {
        partials[run] = total;
    }
}

/// The second pass: `output[p] = scale · Σ_s partials[p · splits + s]`, one unit per output
/// element, the runs added in order.
#[cube(launch)]
pub(crate) fn sum_partials_kernel<F: Float>(
    partials: &Tensor<f32>,
    output: &mut Tensor<F>,
    splits: usize,
    scale: f32,
    #[define(F)] _dtype: StorageType,
) {
    let position = ABSOLUTE_POS;
    if position >= output.len() {
        terminate!();
    }
    let mut total = f32::new(0.0);
    for s in 0..splits {
        total += partials[position * splits + s];
    }
    output[position] = F::cast_from(total * scale);
}
