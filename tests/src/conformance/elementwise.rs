//! Elementwise ops: binary arithmetic with broadcasting, unary math, activations, clamp, masks.
//!
//! Shapes mix the odd sizes of DESIGN.md §5 (1, 7, 33, 127); binary ops broadcast size-1 dims
//! on both sides, so their backward must reduce the upstream gradient over those dims.

use crate::conformance::KnownIssue;
use crate::tolerance::Tolerance;
use burn::tensor::activation::{gelu, relu, sigmoid};

case!(
    /// `[7, 1, 33] + [1, 5, 33]` → `[7, 5, 33]`; both operands broadcast.
    check_add, Elementwise, routes: &[("float_add", 1)],
    <C> |x, out| {
        let a = x.normal("lhs", [7, 1, 33]);
        let b = x.normal("rhs", [1, 5, 33]);
        out.push("sum", a + b);
    }
);

case!(
    /// `[7, 5, 33] − [1, 1, 33]`.
    check_sub, Elementwise, routes: &[("float_sub", 1)],
    <C> |x, out| {
        let a = x.normal("lhs", [7, 5, 33]);
        let b = x.normal("rhs", [1, 1, 33]);
        out.push("difference", a - b);
    }
);

case!(
    /// `[1, 5, 33] · [7, 5, 1]` → `[7, 5, 33]`.
    check_mul, Elementwise, routes: &[("float_mul", 1)],
    <C> |x, out| {
        let a = x.normal("lhs", [1, 5, 33]);
        let b = x.normal("rhs", [7, 5, 1]);
        out.push("product", a * b);
    }
);

case!(
    /// `[7, 5, 33] / [7, 1, 1]`, denominators in `[0.5, 2)` (away from the pole).
    check_div, Elementwise, routes: &[("float_div", 1)],
    <C> |x, out| {
        let a = x.normal("numerator", [7, 5, 33]);
        let b = x.uniform("denominator", [7, 1, 1], 0.5, 2.0);
        out.push("quotient", a / b);
    }
);

case!(
    /// Non-contiguous operands: `[33, 7]ᵀ + [7, 33]`, and a `[5, 33, 7]` tensor permuted to
    /// `[7, 5, 33]` added to a contiguous one.
    check_add_non_contiguous, Elementwise, routes: &[("float_add", 2), ("float_permute", 1)],
    <C> |x, out| {
        let a = x.normal("transposed lhs", [33, 7]);
        let b = x.normal("rhs", [7, 33]);
        out.push("2d sum", a.transpose() + b);
        let p = x.normal("permuted lhs", [5, 33, 7]);
        let q = x.normal("rhs 3d", [7, 5, 33]);
        out.push("3d sum", p.permute([2, 0, 1]) + q);
    }
);

case!(
    /// `exp` of a `[127]` vector.
    check_exp, Elementwise, routes: &[("float_exp", 1)],
    <C> |x, out| {
        out.push("exp", x.normal("x", [127]).exp());
    }
);

case!(
    /// `log` of `[7, 33]` values in `[0.1, 3)`.
    check_log, Elementwise, routes: &[("float_log", 1)],
    <C> |x, out| {
        out.push("log", x.uniform("x", [7, 33], 0.1, 3.0).log());
    }
);

case!(
    /// `sqrt` of `[1, 127]` values in `[0.1, 3)`.
    check_sqrt, Elementwise, routes: &[("float_sqrt", 1)],
    <C> |x, out| {
        out.push("sqrt", x.uniform("x", [1, 127], 0.1, 3.0).sqrt());
    }
);

case!(
    /// `tanh` of `[33, 7]` values of scale 2 (into the saturating range).
    check_tanh, Elementwise, routes: &[("float_tanh", 1)],
    <C> |x, out| {
        let values = x.normal("x", [33, 7]) * 2.0;
        out.push("tanh", values.tanh());
    }
);

case!(
    /// `sigmoid` of `[7, 33]` values of scale 3.
    check_sigmoid, Elementwise, routes: &[("sigmoid", 1)],
    <C> |x, out| {
        let values = x.normal("x", [7, 33]) * 3.0;
        out.push("sigmoid", sigmoid(values));
    }
);

case!(
    /// `relu` of `[7, 33]` standard normal values (no input is exactly 0).
    check_relu, Elementwise, routes: &[("relu", 1)],
    <C> |x, out| {
        out.push("relu", relu(x.normal("x", [7, 33])));
    }
);

/// Burn 0.21's default `ActivationOps::gelu_backward` (burn-backend
/// `src/backend/ops/activation.rs`) differentiates the tanh approximation of gelu, while the
/// forward `gelu` is the exact erf form; backends that keep the default (NdArray, CubeBackend,
/// Burn's `Fusion` over any backend — burnacc's CPU fusion stack included, since `Fusion` does
/// not pass `gelu_backward` to its inner backend — and `Acc` over them) return gradients off
/// by up to 8.7e-4·|g| (worst at |x| ≈ 2.02). Flex overrides it with the exact derivative
/// Φ(x) + x·φ(x).
const GELU_BACKWARD_IS_TANH_APPROXIMATION: KnownIssue = KnownIssue {
    backends: &["ndarray", "cubecl", "fusion"],
    what: "gelu: grad of x",
    // 8.7e-4 · |g| with |g| ≲ 4 (standard normal upstream gradients, 231 of them).
    bound: Tolerance {
        rel: 0.0,
        abs: 4e-3,
    },
    reason: "Burn 0.21's default gelu_backward differentiates the tanh approximation, not the erf gelu",
};

case!(
    /// Exact (erf) `gelu` of `[7, 33]` values of scale 2. The reference is built from `erf`,
    /// whose autodiff backward is exact, because the reference backend (NdArray) has the
    /// [`GELU_BACKWARD_IS_TANH_APPROXIMATION`] defect itself.
    check_gelu, Elementwise, routes: &[("gelu", 1), ("gelu_backward", 1)],
    known: &[GELU_BACKWARD_IS_TANH_APPROXIMATION],
    <C> |x, out| {
        let values = x.normal("x", [7, 33]) * 2.0;
        let y = if x.is_reference() {
            (values.clone() / core::f64::consts::SQRT_2).erf().add_scalar(1.0) * values * 0.5
        } else {
            gelu(values)
        };
        out.push("gelu", y);
    }
);

case!(
    /// `x^2.5` for `[7, 33]` values in `[0.2, 2)`.
    check_powf_scalar, Elementwise, routes: &[("float_powf_scalar", 1)],
    <C> |x, out| {
        out.push("power", x.uniform("x", [7, 33], 0.2, 2.0).powf_scalar(2.5));
    }
);

case!(
    /// `clamp(x, −0.5, 0.8)` of `[7, 33]` standard normal values: about half are clamped, and
    /// their gradient must be zero. Autodiff has no `float_clamp` of its own: Burn's default
    /// lowers it to two comparisons and two `mask_fill`s before it reaches `Acc`.
    check_clamp, Elementwise, routes: &[("float_lower_elem", 1), ("float_greater_elem", 1), ("float_mask_fill", 2)],
    <C> |x, out| {
        out.push("clamped", x.normal("x", [7, 33]).clamp(-0.5, 0.8));
    }
);

case!(
    /// `mask_fill(x, mask, −3)` of `[7, 33]` with a random mask (p = 0.3); masked positions get
    /// a zero gradient.
    check_mask_fill, Elementwise, routes: &[("float_mask_fill", 1)],
    <C> |x, out| {
        let values = x.normal("x", [7, 33]);
        let mask = x.mask([7, 33], 0.3);
        out.push("filled", values.mask_fill(mask, -3.0));
    }
);
