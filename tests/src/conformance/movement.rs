//! Layout and indexing ops: reshape, permute, transpose, slice, cat, narrow, gather, select.
//!
//! Forward results are exact copies, so any error is a wrong index; the backward passes scatter
//! and accumulate (gather → scatter_add, select → select_add with repeated indices).

case!(
    /// `[7, 33]` → `[33, 7]` → `[3, 77]`.
    check_reshape, Elementwise, routes: &[("float_reshape", 2)],
    <C> |x, out| {
        let values = x.normal("x", [7, 33]);
        out.push("reshaped", values.reshape([33, 7]).reshape([3, 77]));
    }
);

case!(
    /// `[3, 7, 5]` permuted by `[2, 0, 1]` → `[5, 3, 7]`.
    check_permute, Elementwise, routes: &[("float_permute", 1)],
    <C> |x, out| {
        out.push("permuted", x.normal("x", [3, 7, 5]).permute([2, 0, 1]));
    }
);

case!(
    /// `[7, 33]ᵀ` → `[33, 7]`, and `[3, 7, 5]` with dims 0, 2 swapped.
    check_transpose, Elementwise, routes: &[("float_swap_dims", 1)],
    <C> |x, out| {
        out.push("transposed", x.normal("x", [7, 33]).transpose());
        out.push("dims 0, 2 swapped", x.normal("y", [3, 7, 5]).swap_dims(0, 2));
    }
);

case!(
    /// `[7, 33, 5][1..6, 3..30, 0..5]` → `[5, 27, 5]`; the gradient is zero outside the slice.
    check_slice, Elementwise, routes: &[("float_slice", 1)],
    <C> |x, out| {
        out.push("slice", x.normal("x", [7, 33, 5]).slice([1..6, 3..30, 0..5]));
    }
);

case!(
    /// `cat([7, 1], [7, 33], [7, 5])` on dim 1 → `[7, 39]`, and `cat([1, 33], [7, 33])` on dim 0.
    check_cat, Elementwise, routes: &[("float_cat", 2)],
    <C> |x, out| {
        let a = x.normal("a", [7, 1]);
        let b = x.normal("b", [7, 33]);
        let c = x.normal("c", [7, 5]);
        out.push("cat on dim 1", burn::tensor::Tensor::cat(vec![a, b.clone(), c], 1));
        let d = x.normal("d", [1, 33]);
        out.push("cat on dim 0", burn::tensor::Tensor::cat(vec![d, b], 0));
    }
);

case!(
    /// `narrow(dim 1, start 5, length 11)` of `[7, 33]` → `[7, 11]`.
    check_narrow, Elementwise, routes: &[("float_slice", 1)],
    <C> |x, out| {
        out.push("narrowed", x.normal("x", [7, 33]).narrow(1, 5, 11));
    }
);

case!(
    /// `gather(dim 1)` of `[7, 33]` with `[7, 5]` random indices (repeats accumulate in the
    /// backward's scatter_add).
    check_gather, Elementwise, routes: &[("float_gather", 1), ("float_scatter_add", 1)],
    <C> |x, out| {
        let values = x.normal("x", [7, 33]);
        let indices = x.indices([7, 5], 33);
        out.push("gathered", values.gather(1, indices));
    }
);

case!(
    /// `select(dim 0)` of `[7, 33]` with 11 random row indices (so rows repeat).
    check_select, Elementwise, routes: &[("float_select", 1), ("float_select_add", 1)],
    <C> |x, out| {
        let values = x.normal("x", [7, 33]);
        let indices = x.indices([11], 7);
        out.push("selected", values.select(0, indices));
    }
);
