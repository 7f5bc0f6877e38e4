//! `float_reshape` as a view wherever the new shape can walk the same memory, as PyTorch's
//! `view` does: Flex copies every reshape of a tensor that is not contiguous from offset 0,
//! although dropping or adding size-1 dimensions, or splitting and merging dimensions that
//! are laid out one inside the other, needs no copy (attention's `narrow(…).reshape(…)` of
//! `q`, `k` and `v`, a slice along the first dimension, the gradients of such views). The
//! reshapes that do need a copy use burnacc's row copy (`kernels::contiguous`).

use crate::counters::RESHAPE_VIEW;
use crate::kernels::contiguous::contiguous;
use burn::backend::Flex;
use burn::backend::flex::{FlexTensor, Layout};
use burn::tensor::Shape;
use burn::tensor::ops::FloatTensorOps;

/// `tensor` with `shape` (same number of elements), a view where the strides allow.
pub fn float_reshape(tensor: FlexTensor, shape: Shape) -> FlexTensor {
    let layout = tensor.layout();
    if layout.is_contiguous() && layout.start_offset() == 0 {
        return Flex::float_reshape(tensor, shape);
    }
    match view_strides(layout.shape(), layout.strides(), &shape) {
        Some(strides) => {
            RESHAPE_VIEW.bump();
            let start = layout.start_offset();
            tensor.with_layout(Layout::new(shape, strides, start))
        }
        None => Flex::float_reshape(contiguous(tensor), shape),
    }
}

/// Strides under which `new` walks the elements of a tensor of shape `old` and `strides` in
/// the same (row-major) order, or `None` when no such strides exist. PyTorch's
/// `computeStride`: `old` is cut into chunks of dimensions that are laid out one inside the
/// other; each chunk must be covered by whole dimensions of `new`. Size-1 dimensions fit
/// anywhere. Negative strides (flips) are left to the copy.
pub fn view_strides(old: &[usize], strides: &[isize], new: &[usize]) -> Option<Vec<isize>> {
    let numel: usize = old.iter().product();
    if numel == 0 || old.is_empty() || strides.iter().any(|&s| s < 0) {
        return None;
    }
    let mut out = vec![0isize; new.len()];
    let mut view_d = new.len();
    let mut chunk_stride = strides[old.len() - 1];
    let (mut chunk_numel, mut view_numel) = (1usize, 1usize);
    for d in (0..old.len()).rev() {
        chunk_numel *= old[d];
        let chunk_ends =
            d == 0 || (old[d - 1] != 1 && strides[d - 1] != chunk_numel as isize * chunk_stride);
        if !chunk_ends {
            continue;
        }
        while view_d > 0 && (view_numel < chunk_numel || new[view_d - 1] == 1) {
            out[view_d - 1] = view_numel as isize * chunk_stride;
            view_numel *= new[view_d - 1];
            view_d -= 1;
        }
        if view_numel != chunk_numel {
            return None;
        }
        if d > 0 {
            chunk_stride = strides[d - 1];
            chunk_numel = 1;
            view_numel = 1;
        }
    }
    (view_d == 0).then_some(out)
}
