//! Reductions and normalisations: sum, mean and max over a dim and over all, softmax and
//! log_softmax on the last dim.

use burn::tensor::activation::{log_softmax, softmax};

case!(
    /// `[7, 33, 5]` summed over dim 1 → `[7, 1, 5]`.
    check_sum_dim, Reduction, routes: &[("float_sum_dim", 1)],
    <C> |x, out| {
        out.push("sum over dim 1", x.normal("x", [7, 33, 5]).sum_dim(1));
    }
);

case!(
    /// `[7, 127]` summed over every element → `[1]`.
    check_sum, Reduction, routes: &[("float_sum", 1)],
    <C> |x, out| {
        out.push("sum", x.normal("x", [7, 127]).sum());
    }
);

case!(
    /// `[7, 127]` averaged over dim 1 → `[7, 1]`.
    check_mean_dim, Reduction, routes: &[("float_mean_dim", 1)],
    <C> |x, out| {
        out.push("mean over dim 1", x.normal("x", [7, 127]).mean_dim(1));
    }
);

case!(
    /// `[33, 7]` averaged over every element → `[1]`.
    check_mean, Reduction, routes: &[("float_mean", 1)],
    <C> |x, out| {
        out.push("mean", x.normal("x", [33, 7]).mean());
    }
);

case!(
    /// Max of `[7, 33]` over dim 1 → `[7, 1]` and over dim 0 → `[1, 33]`; the gradient goes to
    /// the arg-max only (random values: no ties).
    check_max_dim, Reduction, routes: &[("float_max_dim_with_indices", 1)],
    <C> |x, out| {
        let values = x.normal("x", [7, 33]);
        out.push("max over dim 1", values.clone().max_dim(1));
        out.push("max over dim 0", values.max_dim(0));
    }
);

case!(
    /// `softmax` of `[7, 127]` logits of scale 3 over the last dim.
    check_softmax, Reduction, routes: &[("float_exp", 1)],
    <C> |x, out| {
        let logits = x.normal("logits", [7, 127]) * 3.0;
        out.push("softmax", softmax(logits, 1));
    }
);

case!(
    /// `log_softmax` of `[3, 7, 33]` logits of scale 3 over the last dim.
    check_log_softmax, Reduction, routes: &[("float_exp", 1)],
    <C> |x, out| {
        let logits = x.normal("logits", [3, 7, 33]) * 3.0;
        out.push("log_softmax", log_softmax(logits, 2));
    }
);
