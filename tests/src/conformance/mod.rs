//! Tier-2 conformance suite (DESIGN.md §5): every op, forward and backward, on every backend
//! stack we ship, against an f64 reference.
//!
//! Each op has one generic body, `check_<op>::<B>(device)`, that builds inputs on the host from a
//! seeded RNG, runs the op on `B` and on `Autodiff<NdArray<f64>>`, backpropagates a random
//! upstream gradient, and compares outputs and input gradients with the tolerance table
//! ([`crate::tolerance`]). It returns the `Acc` ops it must have gone through ([`Routes`]): on
//! `Acc` stacks the suite asserts those counters, on the others it asserts `Acc` saw nothing.
//!
//! Checks are grouped in families ([`elementwise`](families::elementwise), …); the test binary
//! stamps one `#[test]` per family and backend stack (`suite.rs`).

use crate::conformance::harness::Routes;
use burn::tensor::backend::AutodiffBackend;
use burnacc_backend::counters;
use std::panic::{AssertUnwindSafe, catch_unwind};

/// Defines `pub fn $check<B: AutodiffBackend>(device) -> Routes` from one generic body.
///
/// `case!(check_add, Elementwise, routes: &[("float_add", 1)], <C> |x, out| { … })`: the body
/// runs once per backend with `C` the backend, `x: &mut Inputs<C>`, `out: &mut Outputs<C>`; the
/// op's name in messages is the function name without `check_`, and `Elementwise` names the
/// [`OpKind`](crate::tolerance::OpKind) row of the tolerance table. An optional
/// `known: &[KnownIssue { … }],` before the body excuses a known backend defect
/// ([`harness::KnownIssue`]).
macro_rules! case {
    (@known) => { &[] };
    (@known $known:expr) => { $known };
    (
        $(#[$doc:meta])*
        $check:ident, $kind:ident, routes: $routes:expr, $(known: $known:expr,)?
        <$c:ident> |$x:ident, $out:ident| $body:block
    ) => {
        $(#[$doc])*
        pub fn $check<B: burn::tensor::backend::AutodiffBackend>(
            device: &B::Device,
        ) -> $crate::conformance::harness::Routes {
            struct Body;
            impl $crate::conformance::harness::Case for Body {
                fn run<$c: burn::tensor::backend::AutodiffBackend>(
                    &self,
                    $x: &mut $crate::conformance::harness::Inputs<$c>,
                    $out: &mut $crate::conformance::harness::Outputs<$c>,
                ) $body
            }
            let op = stringify!($check).trim_start_matches("check_");
            let known: &[$crate::conformance::harness::KnownIssue] = case!(@known $($known)?);
            $crate::conformance::harness::check::<B, Body>(
                device,
                op,
                $crate::tolerance::OpKind::$kind,
                known,
                &Body,
            );
            $routes
        }
    };
}

pub mod elementwise;
pub mod harness;
pub mod matmul;
pub mod movement;
pub mod nn;
pub mod reduction;

pub use harness::{Case, Inputs, KnownIssue, Outputs, Reference};

/// A check, instantiated for one backend.
pub type Check<B> = fn(&<B as burn::tensor::backend::BackendTypes>::Device) -> Routes;

/// The op families; each returns its checks, named, for one backend.
pub mod families {
    use super::Check;
    use super::{elementwise, matmul, movement, nn, reduction};
    use burn::tensor::backend::AutodiffBackend;

    macro_rules! family {
        ($(#[$doc:meta])* $name:ident: $($module:ident::$check:ident),* $(,)?) => {
            $(#[$doc])*
            pub fn $name<B: AutodiffBackend>() -> Vec<(&'static str, Check<B>)> {
                vec![$((stringify!($check), $module::$check::<B> as Check<B>)),*]
            }
        };
    }

    family!(
        /// Binary arithmetic with broadcasting, unary math, activations, clamp, mask_fill.
        elementwise:
        elementwise::check_add,
        elementwise::check_sub,
        elementwise::check_mul,
        elementwise::check_div,
        elementwise::check_add_non_contiguous,
        elementwise::check_exp,
        elementwise::check_log,
        elementwise::check_sqrt,
        elementwise::check_tanh,
        elementwise::check_sigmoid,
        elementwise::check_relu,
        elementwise::check_gelu,
        elementwise::check_powf_scalar,
        elementwise::check_clamp,
        elementwise::check_mask_fill,
    );

    family!(
        /// Sum, mean, max, softmax, log_softmax.
        reduction:
        reduction::check_sum_dim,
        reduction::check_sum,
        reduction::check_mean_dim,
        reduction::check_mean,
        reduction::check_max_dim,
        reduction::check_softmax,
        reduction::check_log_softmax,
    );

    family!(
        /// Batched and non-contiguous matmul.
        matmul:
        matmul::check_matmul,
        matmul::check_matmul_row,
        matmul::check_matmul_non_contiguous,
    );

    family!(
        /// Reshape, permute, transpose, slice, cat, narrow, gather, select.
        movement:
        movement::check_reshape,
        movement::check_permute,
        movement::check_transpose,
        movement::check_slice,
        movement::check_cat,
        movement::check_narrow,
        movement::check_gather,
        movement::check_select,
    );

    family!(
        /// Linear, Conv2d, BatchNorm, MaxPool2d, AdaptiveAvgPool2d, CrossEntropyLoss.
        nn:
        nn::check_linear,
        nn::check_conv2d,
        nn::check_batch_norm,
        nn::check_max_pool2d,
        nn::check_adaptive_avg_pool2d,
        nn::check_cross_entropy,
    );
}

/// Whether a backend stack has `Acc` in it, which decides what the counters must show.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stack {
    /// `Autodiff<Acc<…>>`: every check's [`Routes`] must show in `Acc`'s counters (`Acc`
    /// below autodiff sees the backward's ops too).
    Acc,
    /// `Acc<Autodiff<…>>`, as `train` ships it: `Acc` sees the ops the check calls, not the
    /// ones autodiff runs for their backward, so each check must show in `Acc`'s counters.
    AccAboveAutodiff,
    /// A stack without `Acc`: `Acc`'s counters must not move.
    Plain,
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else if let Some(s) = payload.downcast_ref::<&str>() {
        s.to_string()
    } else {
        "non-string panic".to_string()
    }
}

/// Runs every check of a family on `B`, then fails naming every check that failed.
///
/// Each check runs to completion even when an earlier one failed, so one run reports all the
/// broken ops of a backend. Counters are per thread, so checks running in parallel test
/// threads do not disturb each other's counts.
pub fn run_family<B: AutodiffBackend>(
    device: &B::Device,
    stack: Stack,
    checks: Vec<(&'static str, Check<B>)>,
) {
    let mut failures = Vec::new();
    for (name, check) in checks {
        let before = counters::snapshot();
        let result = catch_unwind(AssertUnwindSafe(|| check(device)));
        let delta = counters::snapshot().since(&before);
        match (result, stack) {
            (Err(payload), _) => failures.push(format!("{name}: {}", panic_message(&*payload))),
            (Ok(routes), Stack::Acc) => {
                for (op, min) in routes {
                    let seen = delta.op(op);
                    if seen < *min {
                        failures.push(format!(
                            "{name}: expected at least {min} call(s) of `{op}` through Acc, saw {seen}; Acc saw {:?}",
                            delta.nonzero()
                        ));
                    }
                }
            }
            (Ok(_), Stack::AccAboveAutodiff) => {
                if delta.total_ops() == 0 {
                    failures.push(format!("{name}: no op of the check passed through Acc"));
                }
            }
            (Ok(_), Stack::Plain) => {
                if delta.total_ops() != 0 {
                    failures.push(format!(
                        "{name}: ran on a stack without Acc, yet Acc counted {:?}",
                        delta.nonzero()
                    ));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} check(s) failed on {}:\n{}",
        failures.len(),
        B::name(device),
        failures.join("\n")
    );
}
