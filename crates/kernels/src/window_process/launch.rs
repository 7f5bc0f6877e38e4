//! Host side of the window processing: shape checks, output allocation, vector-size choice and
//! kernel launches on Burn's CubeCL primitive ([`CubeTensor`]).
//!
//! Inputs are made contiguous first (a strided view is copied once). An empty input launches
//! nothing (and bumps no counter).

use burn::tensor::Shape;
use burn_cubecl::CubeRuntime;
use burn_cubecl::tensor::CubeTensor;

use super::WindowGeometry;
use super::counters;
use super::kernel::window_gather_kernel;
use crate::cube_util::{contiguous_as, elementwise_grid, empty_like, vector_size};

/// Which gather [`gather`] launches.
#[derive(Clone, Copy)]
enum Direction {
    Process,
    Reverse,
}

/// Launches the gather of `direction` from `input` (already contiguous, last dimension `c`)
/// into a new contiguous tensor of shape `out_shape`; returns it and whether anything ran.
fn gather<R: CubeRuntime>(
    direction: Direction,
    input: CubeTensor<R>,
    out_shape: Shape,
    geometry: WindowGeometry,
) -> (CubeTensor<R>, bool) {
    let dtype = input.dtype;
    let c = out_shape[out_shape.num_dims() - 1];
    let out = empty_like(&input, out_shape.clone(), dtype);
    let len = out_shape.num_elements();
    if len == 0 {
        return (out, false);
    }
    // Vectors along the channels: a width dividing both tensors' last dimension (they match).
    let n = vector_size(&input).min(vector_size(&out));
    let (count, dim) = elementwise_grid(&input, len / n);
    let [h, w] = geometry.resolution;
    let [wh, ww] = geometry.window;
    let [nh, nw] = geometry.windows();
    let [sh, sw] = geometry.shift_in_map();
    let client = input.client.clone();
    let (input, output) = (input.into_tensor_arg(), out.clone().into_tensor_arg());
    window_gather_kernel::launch::<R>(
        &client,
        count,
        dim,
        n,
        input,
        output,
        h,
        w,
        wh,
        ww,
        nh,
        nw,
        sh,
        sw,
        c / n,
        matches!(direction, Direction::Reverse),
        dtype.into(),
    );
    (out, true)
}

/// Fused shift + pad + window partition.
///
/// - `x`: `[batch, h, w, c]`, `[h, w]` = `geometry.resolution`, any float dtype;
/// - returns `[batch · nh · nw, wh · ww, c]` in the dtype of `x`.
pub fn window_process_cube<R: CubeRuntime>(
    x: CubeTensor<R>,
    geometry: WindowGeometry,
) -> CubeTensor<R> {
    geometry.check();
    let dims = x.meta.shape().as_slice().to_vec();
    let [batch, h, w, c] = dims[..] else {
        panic!("window_process: x must be [batch, h, w, c], got {dims:?}");
    };
    assert_eq!(
        [h, w],
        geometry.resolution,
        "window_process: the map is {h}x{w}, the geometry says {:?}",
        geometry.resolution
    );
    let x = contiguous_as(x, Shape::new([batch, h, w, c]));
    let out_shape = Shape::new([
        batch * geometry.windows_per_image(),
        geometry.window_area(),
        c,
    ]);
    let (out, launched) = gather(Direction::Process, x, out_shape, geometry);
    if launched {
        counters::PROCESS.bump();
    }
    out
}

/// Fused window merge + crop + reverse shift, the inverse of [`window_process_cube`].
///
/// - `windows`: `[batch · nh · nw, wh · ww, c]`, any float dtype;
/// - returns `[batch, h, w, c]` in the dtype of `windows`.
pub fn window_process_reverse_cube<R: CubeRuntime>(
    windows: CubeTensor<R>,
    geometry: WindowGeometry,
) -> CubeTensor<R> {
    geometry.check();
    let dims = windows.meta.shape().as_slice().to_vec();
    let [count, area, c] = dims[..] else {
        panic!("window_process_reverse: windows must be [windows, tokens, c], got {dims:?}");
    };
    let per_image = geometry.windows_per_image();
    assert!(
        area == geometry.window_area() && count % per_image == 0,
        "window_process_reverse: {dims:?} windows do not match {geometry:?}"
    );
    let [h, w] = geometry.resolution;
    let windows = contiguous_as(windows, Shape::new([count, area, c]));
    let out_shape = Shape::new([count / per_image, h, w, c]);
    let (out, launched) = gather(Direction::Reverse, windows, out_shape, geometry);
    if launched {
        counters::REVERSE.bump();
    }
    out
}
