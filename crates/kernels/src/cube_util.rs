//! Host-side helpers the CubeCL launchers share: shapes as rows, contiguous views, vector
//! sizes, element-wise grids and output allocation on Burn's [`CubeTensor`].

use burn::cubecl::{
    CubeCount, CubeDim, calculate_cube_count_elemwise, tensor_vector_size_parallel,
};
use burn::tensor::{DType, Shape};
use burn_cubecl::CubeRuntime;
use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::ops::numeric::empty_device_contiguous_dtype;
use burn_cubecl::ops::reshape;
use burn_cubecl::tensor::CubeTensor;

/// `[..., width]` → `(rows, width)` with `rows` the product of the leading dimensions; `op`
/// names the operation in the panic message of a rank-0 input.
pub(crate) fn rows_and_width(op: &str, shape: &Shape) -> (usize, usize) {
    let dims = shape.as_slice();
    let (&width, leading) = dims
        .split_last()
        .unwrap_or_else(|| panic!("{op}: the input must have at least one dimension"));
    (leading.iter().product(), width)
}

/// Contiguous view of `tensor` with the given shape (no copy when already contiguous): the
/// kernels index by row-major linear index.
pub(crate) fn contiguous_as<R: CubeRuntime>(tensor: CubeTensor<R>, shape: Shape) -> CubeTensor<R> {
    reshape(into_contiguous(tensor), shape)
}

/// The widest vector the device loads efficiently for this dtype that divides the last
/// dimension of the contiguous `tensor` (1 when none does), so that vectors never straddle
/// rows.
pub(crate) fn vector_size<R: CubeRuntime>(tensor: &CubeTensor<R>) -> usize {
    let sizes = tensor.client.io_optimized_vector_sizes(tensor.dtype.size());
    let last = tensor.meta.num_dims() - 1;
    tensor_vector_size_parallel(sizes, tensor.meta.shape(), tensor.meta.strides(), last)
}

/// Grid of an element-wise kernel with one unit per vector.
pub(crate) fn elementwise_grid<R: CubeRuntime>(
    tensor: &CubeTensor<R>,
    units: usize,
) -> (CubeCount, CubeDim) {
    let dim = CubeDim::new(&tensor.client, units);
    (
        calculate_cube_count_elemwise(&tensor.client, units, dim),
        dim,
    )
}

/// Allocates a contiguous tensor on the device of `like`.
pub(crate) fn empty_like<R: CubeRuntime>(
    like: &CubeTensor<R>,
    shape: Shape,
    dtype: DType,
) -> CubeTensor<R> {
    empty_device_contiguous_dtype(like.client.clone(), like.device.clone(), shape, dtype)
}

/// The largest power of two no larger than `wanted` (at least 1) and the device's limits on
/// units per cube: the cube size of a kernel whose tree reduction halves the cube down to one
/// unit.
pub(crate) fn power_of_two_cube<R: CubeRuntime>(like: &CubeTensor<R>, wanted: u32) -> u32 {
    let hardware = &like.client.properties().hardware;
    let limit = wanted
        .max(1)
        .min(hardware.max_units_per_cube)
        .min(hardware.max_cube_dim.0);
    1 << (u32::BITS - 1 - limit.leading_zeros())
}

/// Largest cube of a long reduction: 256 units, within every device's limit, a few elements
/// each for the per-channel sums of a batch norm at small batches.
const MAX_REDUCTION_CUBE: u32 = 256;
/// Elements a unit sums before a reduction is split over more cubes.
const ELEMENTS_PER_UNIT: usize = 64;
/// Most runs a reduction is split into (a second kernel adds them serially).
const MAX_SPLITS: usize = 64;

/// Into how many runs a reduction of `count` elements per output is split, one cube each: one
/// run while a cube's units sum at most [`ELEMENTS_PER_UNIT`] elements each; beyond, enough
/// runs to keep them there, up to [`MAX_SPLITS`] (a second kernel adds the runs). A
/// per-channel sum of a `[256, 64, 56, 56]` gradient is 64 outputs of 200,704 elements: 64
/// cubes alone would leave most of a large GPU idle.
pub(crate) fn reduction_splits(count: usize, block: u32) -> usize {
    count
        .div_ceil(block as usize * ELEMENTS_PER_UNIT)
        .clamp(1, MAX_SPLITS)
}

/// The cube size of a reduction of `count` elements per output: a power of two no larger than
/// the count (rounded up) and [`MAX_REDUCTION_CUBE`], since the kernel's tree reduction halves
/// it down to one unit.
pub(crate) fn reduction_cube_size<R: CubeRuntime>(like: &CubeTensor<R>, count: usize) -> u32 {
    let wanted = count
        .max(1)
        .next_power_of_two()
        .min(MAX_REDUCTION_CUBE as usize) as u32;
    power_of_two_cube(like, wanted)
}
