//! burnacc's row copy of strided f32 views (`kernels::contiguous`) against Flex's
//! `to_contiguous`, element for element: batch norm's channel-major view, Swin's window
//! partition, offset and column views, size-1 dimensions, a copy large enough to be split over
//! threads. The counter says which layouts took the row copy; two-dimensional transposes, other
//! dtypes and tensors that already own their row-major buffer do not.

use super::kernel_support::{
    assert_identical, cast, columns, counted, normal, offset_view, transposed,
};
use burn::backend::Flex;
use burn::backend::flex::FlexTensor;
use burn::tensor::ops::FloatTensorOps;
use burn::tensor::{FloatDType, Shape};
use burnacc_fusion::CpuFlex;
use burnacc_fusion::counters::STRIDED_COPY;
use burnacc_fusion::kernels::contiguous::contiguous;

/// `contiguous(t)` equals Flex's copy; `copies`: whether the row copy must run.
fn copy_matches_flex(what: &str, t: FlexTensor, copies: bool) {
    let expected = t.to_contiguous();
    let got = counted(&STRIDED_COPY, u64::from(copies), what, || {
        contiguous(t.clone())
    });
    assert!(
        got.is_contiguous() && got.layout().start_offset() == 0,
        "{what}: row-major"
    );
    assert_identical(what, got, expected);
}

#[test]
fn batch_norm_s_channel_major_view_is_copied_by_rows() {
    // x: [N, C, H, W] → swap_dims(0, 1): [C, N, H, W], rows of H·W contiguous elements.
    let x = Flex::float_swap_dims(normal(&[3, 5, 7, 9], 1, 1.0), 0, 1);
    copy_matches_flex("swap_dims(0, 1)", x.clone(), true);
    // The model reaches it through a reshape, which CpuFlex copies with the row copy.
    let reshaped = counted(&STRIDED_COPY, 1, "reshape of the swapped view", || {
        CpuFlex::float_reshape(x.clone(), Shape::new([5, 3 * 7 * 9]))
    });
    assert_identical(
        "reshape of the swapped view",
        reshaped,
        Flex::float_reshape(x, Shape::new([5, 3 * 7 * 9])),
    );
}

#[test]
fn swin_s_window_partition_is_copied_by_rows() {
    // [B, H/w, w, W/w, w, C] → permute [0, 1, 3, 2, 4, 5]: windows of w rows of w·C.
    let (b, w, c) = (2, 7, 6);
    let x = Flex::float_reshape(
        normal(&[b, 2 * w, 3 * w, c], 2, 1.0),
        Shape::new([b, 2, w, 3, w, c]),
    );
    let windows = Flex::float_permute(x, &[0, 1, 3, 2, 4, 5]);
    copy_matches_flex("window partition", windows, true);
}

#[test]
fn offset_column_and_padded_views() {
    copy_matches_flex(
        "offset view",
        offset_view(normal(&[5, 4, 3], 3, 1.0), 2),
        true,
    );
    let cols = columns(normal(&[6, 4, 11], 4, 1.0), 3, 5);
    copy_matches_flex("column range", cols, true);
    // Size-1 dimensions around a permuted core.
    let padded = Flex::float_permute(normal(&[1, 4, 1, 6, 5], 5, 1.0), &[3, 1, 2, 0, 4]);
    copy_matches_flex("size-1 dimensions", padded, true);
    // A strided gather inside rows: a permutation whose innermost dimension is not the last.
    let inner = Flex::float_permute(normal(&[3, 4, 5, 6], 6, 1.0), &[0, 1, 3, 2]);
    copy_matches_flex("inner transpose", inner, true);
}

#[test]
fn large_copies_split_over_threads() {
    let x = Flex::float_swap_dims(normal(&[8, 64, 33, 31], 7, 1.0), 0, 1);
    copy_matches_flex("large swap_dims(0, 1)", x, true);
}

#[test]
fn other_layouts_and_dtypes_are_left_to_flex() {
    copy_matches_flex(
        "2-d transpose",
        transposed(normal(&[37, 29], 8, 1.0)),
        false,
    );
    let f64_view = Flex::float_swap_dims(cast(normal(&[3, 5, 7], 9, 1.0), FloatDType::F64), 0, 1);
    copy_matches_flex("f64 view", f64_view, false);
    let whole = normal(&[4, 5, 6], 10, 1.0);
    let same = counted(&STRIDED_COPY, 0, "whole tensor", || {
        contiguous(whole.clone())
    });
    assert!(
        std::sync::Arc::ptr_eq(&same.data_arc(), &whole.data_arc()),
        "a tensor that owns its row-major buffer is returned as it is"
    );
}
