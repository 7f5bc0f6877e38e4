//! Matrix products: batched, odd sizes, a degenerate row, and non-contiguous operands.

case!(
    /// Batched `[3, 7, 33] × [3, 33, 127]` → `[3, 7, 127]`. Backward is two more matmuls.
    check_matmul, Contraction, routes: &[("float_matmul", 3)],
    <C> |x, out| {
        let a = x.normal("lhs", [3, 7, 33]);
        let b = x.normal("rhs", [3, 33, 127]);
        out.push("product", a.matmul(b));
    }
);

case!(
    /// A single row: `[1, 1, 33] × [1, 33, 7]` → `[1, 1, 7]`.
    check_matmul_row, Contraction, routes: &[("float_matmul", 3)],
    <C> |x, out| {
        let a = x.normal("lhs", [1, 1, 33]);
        let b = x.normal("rhs", [1, 33, 7]);
        out.push("product", a.matmul(b));
    }
);

case!(
    /// Transposed operands: `[3, 33, 7]` with dims 1, 2 swapped times `[3, 127, 33]` with dims
    /// 1, 2 swapped → `[3, 7, 127]`, both operands strided views.
    check_matmul_non_contiguous, Contraction, routes: &[("float_matmul", 3), ("float_swap_dims", 2)],
    <C> |x, out| {
        let a = x.normal("lhs (stored transposed)", [3, 33, 7]);
        let b = x.normal("rhs (stored transposed)", [3, 127, 33]);
        out.push("product", a.swap_dims(1, 2).matmul(b.swap_dims(1, 2)));
    }
);
