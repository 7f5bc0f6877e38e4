//! Host side of the multi-axis sum: the permuted view, the output and the launch on Burn's
//! CubeCL tensor primitive ([`CubeTensor`]).

use burn::cubecl::CubeDim;
use burn::cubecl::server::CubeCountSelection;
use burn::cubecl::zspace::metadata::Metadata;
use burn::tensor::{DType, Shape};
use burn_cubecl::CubeRuntime;
use burn_cubecl::ops::permute;
use burn_cubecl::tensor::CubeTensor;

use super::counters;
use super::kernel::{
    sum_partials_kernel, sum_trailing_axes_kernel, sum_trailing_axes_partial_kernel,
};
use crate::cube_util::{elementwise_grid, empty_like, reduction_cube_size, reduction_splits};

/// `scale · Σ x` over `axes`, the reduced axes kept with size 1 (Burn's `sum_dim` applied once
/// per axis, then multiplied by `scale`; `scale = 1 / n` makes it a mean).
///
/// - `x`: any rank, any strides, any float dtype the device supports (f32, f16, bf16);
/// - `axes`: the axes to reduce, each `< rank`, in any order; repeats are ignored;
/// - returns a contiguous tensor of `x`'s dtype, shaped like `x` with every reduced axis 1.
///
/// One kernel launch, two for long reductions (f32 partial sums over runs of the reduced
/// elements, then their sum; see `reduction_splits`), none when the output is empty. The sums are
/// accumulated in f32; an empty reduction gives 0. Panics when an axis is out of range.
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
    let (view, kept_rank) = coalesced(permute(x, &order), kept_rank);
    let client = output.client.clone();
    let block = reduction_cube_size(&output, count);
    let splits = reduction_splits(count, block);
    if splits == 1 {
        sum_trailing_axes_kernel::launch::<R>(
            &client,
            CubeCountSelection::new(&client, out_len as u32).cube_count(),
            CubeDim::new_1d(block),
            view.into_tensor_arg(),
            output.clone().into_tensor_arg(),
            count,
            scale,
            kept_rank,
            block,
            dtype.into(),
        );
    } else {
        let chunk = count.div_ceil(splits);
        let partials = empty_like(&output, Shape::new([out_len * splits]), DType::F32);
        sum_trailing_axes_partial_kernel::launch::<R>(
            &client,
            CubeCountSelection::new(&client, (out_len * splits) as u32).cube_count(),
            CubeDim::new_1d(block),
            view.into_tensor_arg(),
            partials.clone().into_tensor_arg(),
            count,
            chunk,
            splits,
            kept_rank,
            block,
            dtype.into(),
        );
        let (cubes, dim) = elementwise_grid(&output, out_len);
        sum_partials_kernel::launch::<R>(
            &client,
            cubes,
            dim,
            partials.into_tensor_arg(),
            output.clone().into_tensor_arg(),
            splits,
            scale,
            dtype.into(),
        );
        counters::SPLIT_LAUNCHES.bump();
    }
    counters::LAUNCHES.bump();
    output
}

/// `view` (its first `kept_rank` axes kept, the others reduced) with axes of size 1 dropped and
/// neighbours merged where the storage allows (`stride[i] = stride[i + 1] · size[i + 1]`, both
/// kept or both reduced): the same elements in the same order, with fewer axes for the kernel
/// to divide its indices by. The H and W of a batch norm's `[N, C, H, W]` become one axis.
///
/// Returns the view and its number of kept axes; at least one axis stays (of size 1 if all
/// were).
fn coalesced<R: CubeRuntime>(mut view: CubeTensor<R>, kept_rank: usize) -> (CubeTensor<R>, usize) {
    let dims = view.meta.shape().as_slice().to_vec();
    let strides = view.meta.strides().to_vec();
    let mut merged_dims: Vec<usize> = Vec::with_capacity(dims.len());
    let mut merged_strides: Vec<usize> = Vec::with_capacity(dims.len());
    let mut merged_kept = 0;
    for (axis, (&size, &stride)) in dims.iter().zip(&strides).enumerate() {
        if size == 1 {
            continue;
        }
        let kept = axis < kept_rank;
        // The last merged axis is on the same side (kept or reduced) as this one when the
        // kept count says so: kept axes all come first.
        let last_on_same_side = if kept {
            merged_dims.len() == merged_kept && merged_kept > 0
        } else {
            merged_dims.len() > merged_kept
        };
        match (merged_dims.last_mut(), merged_strides.last_mut()) {
            (Some(last_size), Some(last_stride))
                if last_on_same_side && *last_stride == stride * size =>
            {
                *last_size *= size;
                *last_stride = stride;
            }
            _ => {
                merged_dims.push(size);
                merged_strides.push(stride);
                merged_kept += usize::from(kept);
            }
        }
    }
    if merged_dims.is_empty() {
        merged_dims.push(1);
        merged_strides.push(1);
    }
    *view.meta = Metadata::new(Shape::from(merged_dims), merged_strides);
    (view, merged_kept)
}
