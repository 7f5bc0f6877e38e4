//! Host side of the multi-axis sum: the permuted view, the output and the launch on Burn's
//! CubeCL tensor primitive ([`CubeTensor`]).

use burn::cubecl::CubeDim;
use burn::cubecl::server::CubeCountSelection;
use burn::tensor::Shape;
use burn_cubecl::CubeRuntime;
use burn_cubecl::ops::permute;
use burn_cubecl::tensor::CubeTensor;

use super::counters;
use super::kernel::sum_trailing_axes_kernel;
use crate::cube_util::empty_like;

/// Largest cube: 256 units, within every device's limit, a few elements each for the
/// per-channel sums of a batch norm at small batches.
const MAX_CUBE: u32 = 256;

/// `scale · Σ x` over `axes`, the reduced axes kept with size 1 (Burn's `sum_dim` applied once
/// per axis, then multiplied by `scale`; `scale = 1 / n` makes it a mean).
///
/// - `x`: any rank, any strides, any float dtype the device supports (f32, f16, bf16);
/// - `axes`: the axes to reduce, each `< rank`, in any order; repeats are ignored;
/// - returns a contiguous tensor of `x`'s dtype, shaped like `x` with every reduced axis 1.
///
/// One kernel launch (none when the output is empty). The sums are accumulated in f32; an
/// empty reduction gives 0. Panics when an axis is out of range.
pub fn sum_axes_cube<R: CubeRuntime>(
    x: CubeTensor<R>,
    axes: &[usize],
    scale: f32,
) -> CubeTensor<R> {
    let dims = x.meta.shape().as_slice().to_vec();
    let rank = dims.len();
    let reduced: Vec<bool> = (0..rank).map(|axis| axes.contains(&axis)).collect();
    if let Some(axis) = axes.iter().find(|&&axis| axis >= rank) {
        panic!("sum_axes: axis {axis} out of range for a rank-{rank} tensor {dims:?}");
    }

    // Kept axes first, in order, then the reduced ones: the kernel reduces the trailing axes.
    let order: Vec<usize> = (0..rank)
        .filter(|&axis| !reduced[axis])
        .chain((0..rank).filter(|&axis| reduced[axis]))
        .collect();
    let kept_rank = reduced.iter().filter(|&&r| !r).count();
    let out_dims: Vec<usize> = dims
        .iter()
        .zip(&reduced)
        .map(|(&size, &r)| if r { 1 } else { size })
        .collect();
    let out_len: usize = out_dims.iter().product();
    let count: usize = dims
        .iter()
        .zip(&reduced)
        .filter(|(_, r)| **r)
        .map(|(s, _)| s)
        .product();

    let dtype = x.dtype;
    let output = empty_like(&x, Shape::from(out_dims), dtype);
    if out_len == 0 {
        return output;
    }
    let view = permute(x, &order);
    let client = output.client.clone();
    let block = cube_size(&output, count);
    sum_trailing_axes_kernel::launch::<R>(
        &client,
        CubeCountSelection::new(&client, out_len as u32).cube_count(),
        CubeDim::new_1d(block),
        view.into_tensor_arg(),
        output.clone().into_tensor_arg(),
        scale,
        kept_rank,
        block,
        dtype.into(),
    );
    counters::LAUNCHES.bump();
    output
}

/// A power of two no larger than the reduced count (rounded up), [`MAX_CUBE`] or the device's
/// limit: the kernel's tree reduction halves it down to one unit.
fn cube_size<R: CubeRuntime>(like: &CubeTensor<R>, count: usize) -> u32 {
    let hardware = &like.client.properties().hardware;
    let limit = MAX_CUBE
        .min(hardware.max_units_per_cube)
        .min(hardware.max_cube_dim.0);
    let wanted = (count.max(1).next_power_of_two() as u64).min(limit as u64) as u32;
    // The largest power of two within `wanted` (it already is one unless the limit is not).
    1 << (u32::BITS - 1 - wanted.leading_zeros())
}
