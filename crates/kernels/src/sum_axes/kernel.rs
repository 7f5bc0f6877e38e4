//! The CubeCL kernel of the multi-axis sum.

use burn::cubecl;
use cubecl::prelude::*;

use crate::cube_tree::cube_sum;

/// `output[p] = scale · Σ input[kept(p), r]` over every `r` of the trailing axes, one cube per
/// output element `p`.
///
/// - `input`: a strided view whose first `kept_rank` axes are the kept ones (in output order)
///   and whose remaining axes are the reduced ones, any strides (the launcher permutes the
///   view, it does not copy); storage `F`;
/// - `output`: contiguous, `Π kept sizes` elements, storage `F`;
/// - `block_size`: the cube size (a power of two), which sizes the shared array.
///
/// Each unit sums every `CUBE_DIM_X`-th reduced element in f32 (consecutive units read
/// consecutive elements of the innermost reduced axis), then the cube adds the partial sums as
/// a tree. Cubes past the output exit at once, before any barrier.
#[cube(launch)]
pub(crate) fn sum_trailing_axes_kernel<F: Float>(
    input: &Tensor<F>,
    output: &mut Tensor<F>,
    scale: f32,
    #[comptime] kept_rank: usize,
    #[comptime] block_size: u32,
    #[define(F)] _dtype: StorageType,
) {
    let position = CUBE_POS;
    if position >= output.len() {
        terminate!();
    }
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
    let mut count = usize::new(1);
    for axis in kept_rank..rank {
        count *= input.shape(axis);
    }

    let unit = UNIT_POS_X as usize;
    let mut acc = f32::new(0.0);
    let mut r = unit;
    while r < count {
        // The innermost reduced axis varies fastest, so consecutive units read neighbours.
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
    if unit == 0 {
        output[position] = F::cast_from(partial[0] * scale);
    }
}
