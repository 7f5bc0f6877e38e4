//! Copying a strided f32 view into a new row-major buffer, as rows of contiguous runs spread
//! over the cores.
//!
//! Flex's `to_contiguous` collapses the view's dimensions first and copies one- and
//! two-dimensional layouts fast (a run, or a cache-tiled transpose), but walks every other
//! layout one element at a time with an index iterator on one thread. Batch norm's
//! `x.swap_dims(0, 1).reshape([C, N·H·W])` is such a layout (`[C, N, H·W]` after collapsing,
//! rows of `H·W` contiguous elements), and so are Swin's window partitions and head splits.

use super::strided::StridedPlan;
use crate::counters::STRIDED_COPY;
use burn::backend::flex::{FlexTensor, Layout};
use burn::tensor::{Bytes, DType};

/// `tensor` as a tensor that owns a row-major buffer of exactly its elements: itself when it
/// already is one; burnacc's row copy for f32 views of three or more collapsed dimensions or
/// with contiguous rows; Flex's `to_contiguous` otherwise (other dtypes, tiled transposes).
pub fn contiguous(tensor: FlexTensor) -> FlexTensor {
    let layout = tensor.layout();
    let shape = layout.shape().to_vec();
    let whole = layout.is_contiguous()
        && layout.start_offset() == 0
        && tensor.bytes().len() == layout.num_elements() * tensor.dtype().size();
    if whole || tensor.dtype() != DType::F32 || layout.strides().iter().any(|&s| s < 0) {
        // Flex's: the tensor itself when whole (another reference to its buffer).
        return tensor.to_contiguous();
    }
    let plan = StridedPlan::new(&shape, [layout]);
    let [row_stride] = plan.row_strides();
    if row_stride != 1 && plan.rank() <= 2 {
        return tensor.to_contiguous();
    }
    STRIDED_COPY.bump();
    let src: &[f32] = tensor.storage();
    let mut out = vec![0f32; layout.num_elements()];
    plan.for_each_row(&mut out, |row, [offset]| {
        if row_stride == 1 {
            row.copy_from_slice(&src[offset..offset + row.len()]);
        } else {
            for (j, value) in row.iter_mut().enumerate() {
                *value = src[(offset as isize + j as isize * row_stride) as usize];
            }
        }
    });
    FlexTensor::new(
        Bytes::from_elems(out),
        Layout::contiguous(shape.into()),
        DType::F32,
    )
}
