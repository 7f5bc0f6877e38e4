//! `CpuFlex`'s `float_reshape` (a view wherever the strides allow, PyTorch's `view` rule)
//! against Flex's (always a copy of a tensor that is not contiguous from offset 0): the same
//! elements in the same order, on permuted, sliced, offset and size-1-padded tensors; the
//! counter says which reshapes were views. Scalar ops on such views run the strided kernel and
//! equal Flex's.

use super::kernel_support::{assert_identical, counted, normal};
use burn::backend::Flex;
use burn::backend::flex::FlexTensor;
use burn::tensor::ops::FloatTensorOps;
use burn::tensor::{Shape, Slice};
use burnacc_fusion::CpuFlex;
use burnacc_fusion::counters::{RESHAPE_VIEW, STRIDED_SCALAR};
use burnacc_fusion::cpu::overrides::view_strides;

/// Reshapes `t` to `shape` both ways; `view`: whether `CpuFlex`'s must be a view.
fn reshape_matches_flex(what: &str, t: FlexTensor, shape: &[usize], view: bool) {
    let expected = Flex::float_reshape(t.clone(), Shape::from(shape.to_vec()));
    let got = counted(&RESHAPE_VIEW, u64::from(view), what, || {
        CpuFlex::float_reshape(t.clone(), Shape::from(shape.to_vec()))
    });
    if view {
        assert!(
            std::sync::Arc::ptr_eq(&got.data_arc(), &t.data_arc()),
            "{what}: a view shares its input's buffer"
        );
    }
    // Other ops on the view read it through its strides.
    let doubled = CpuFlex::float_add(got.clone(), got.clone());
    let scaled = CpuFlex::float_mul_scalar(got.clone(), 0.37f32.into());
    assert_identical(what, got, expected.clone());
    assert_identical(
        &format!("{what}, then added to itself"),
        doubled,
        Flex::float_add(expected.clone(), expected.clone()),
    );
    assert_identical(
        &format!("{what}, then scaled"),
        scaled,
        Flex::float_mul_scalar(expected, 0.37f32.into()),
    );
}

#[test]
fn scalar_ops_on_strided_views_run_the_strided_kernel() {
    type ScalarOp = fn(FlexTensor, burn::tensor::Scalar) -> FlexTensor;
    let ops: [(&str, ScalarOp, ScalarOp); 4] = [
        ("add", CpuFlex::float_add_scalar, Flex::float_add_scalar),
        ("sub", CpuFlex::float_sub_scalar, Flex::float_sub_scalar),
        ("mul", CpuFlex::float_mul_scalar, Flex::float_mul_scalar),
        ("div", CpuFlex::float_div_scalar, Flex::float_div_scalar),
    ];
    let view = Flex::float_permute(normal(&[3, 5, 7, 4], 6, 1.0), &[0, 2, 1, 3]);
    let contiguous = normal(&[5, 9], 7, 1.0);
    for (name, ours, flex) in ops {
        let got = counted(&STRIDED_SCALAR, 1, name, || {
            ours(view.clone(), 1.7f32.into())
        });
        assert_identical(name, got, flex(view.clone(), 1.7f32.into()));
        let got = counted(&STRIDED_SCALAR, 0, name, || {
            ours(contiguous.clone(), 1.7f32.into())
        });
        assert_identical(name, got, flex(contiguous.clone(), 1.7f32.into()));
    }
}

#[test]
fn attention_s_qkv_parts_are_views_and_merged_heads_are_copies() {
    // Swin: [windows, n, 3·dim] → [windows, n, 3, heads, hd] → permute [2, 0, 3, 1, 4] → part i.
    let (windows, n, heads, hd) = (6, 7, 3, 5);
    let qkv = normal(&[windows, n, 3 * heads * hd], 1, 1.0);
    let qkv = Flex::float_reshape(qkv, Shape::new([windows, n, 3, heads, hd]));
    let qkv = Flex::float_permute(qkv, &[2, 0, 3, 1, 4]);
    for i in 0..3 {
        let part = Flex::float_slice(qkv.clone(), &[Slice::new(i, Some(i as isize + 1), 1)]);
        reshape_matches_flex(
            &format!("qkv part {i}"),
            part,
            &[windows, heads, n, hd],
            true,
        );
    }
    // The heads merged back: [windows, heads, n, hd] → swap → [windows, n, heads · hd] copies.
    let context = Flex::float_swap_dims(normal(&[windows, heads, n, hd], 2, 1.0), 1, 2);
    reshape_matches_flex("merged heads", context, &[windows, n, heads * hd], false);
}

#[test]
fn slices_and_splits_of_laid_out_dimensions_are_views() {
    // A slice along the first dimension: contiguous at an offset.
    let rows = Flex::float_slice(normal(&[10, 4, 6], 3, 1.0), &[Slice::new(3, Some(7), 1)]);
    reshape_matches_flex("rows 3..7, flattened", rows.clone(), &[96], true);
    reshape_matches_flex("rows 3..7, split", rows, &[2, 2, 4, 3, 2], true);
    // Columns: each row is a run, rows do not join.
    let columns = Flex::float_slice(
        normal(&[5, 8], 4, 1.0),
        &[Slice::new(0, None, 1), Slice::new(2, Some(6), 1)],
    );
    reshape_matches_flex("columns, rows split", columns.clone(), &[5, 2, 2], true);
    reshape_matches_flex(
        "columns, size-1 dims",
        columns.clone(),
        &[1, 5, 1, 4, 1],
        true,
    );
    reshape_matches_flex("columns, flattened", columns, &[20], false);
    // A transposed matrix can only be copied into another shape.
    let t = Flex::float_swap_dims(normal(&[4, 6], 5, 1.0), 0, 1);
    reshape_matches_flex("transposed, flattened", t.clone(), &[24], false);
    reshape_matches_flex("transposed, split", t, &[3, 2, 4], true);
}

#[test]
fn view_strides_follow_pytorch_s_rule() {
    // Contiguous: the contiguous strides of the new shape.
    assert_eq!(
        view_strides(&[2, 3, 4], &[12, 4, 1], &[6, 4]),
        Some(vec![4, 1])
    );
    // A size-1 dimension with any stride drops out.
    assert_eq!(
        view_strides(&[1, 6, 5], &[999, 5, 1], &[6, 5]),
        Some(vec![5, 1])
    );
    // Merging a transposed pair is impossible; splitting one of its dimensions is not.
    assert_eq!(view_strides(&[3, 4], &[1, 3], &[12]), None);
    assert_eq!(
        view_strides(&[3, 4], &[1, 3], &[3, 2, 2]),
        Some(vec![1, 6, 3])
    );
    // Flips and empty tensors are left to the copy.
    assert_eq!(view_strides(&[4], &[-1], &[2, 2]), None);
    assert_eq!(view_strides(&[0, 4], &[4, 1], &[4, 0]), None);
}
