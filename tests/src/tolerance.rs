//! The one tolerance table of the test suite (DESIGN.md §5), and the comparison that uses it.
//!
//! A value passes when `|got − expected| ≤ abs + rel·|expected|`. `rel` is the table's
//! relative bound; `abs` is a floor for values near zero, where a relative bound means nothing
//! (a sum or a dot product that cancels to ~0 still carries the rounding error of its terms).
//! Test inputs are of unit scale (standard normal or uniform in a small range), so the floors
//! are stated in those units.
//!
//! The expected value is computed in f64 by the reference backend and rounded to the precision
//! under test before comparing, so the table bounds only the error of the backend under test.

use burn::tensor::DType;
use core::fmt;

/// What an op computes, as far as its rounding error is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpKind {
    /// One result per input element, a fixed short formula (add, exp, gelu, reshape, gather…).
    Elementwise,
    /// Results that sum, average or normalise over a dimension (sum, mean, softmax, batch norm,
    /// pooling, losses).
    Reduction,
    /// Dot products: matmul, linear, convolution.
    Contraction,
}

/// The float precision a backend computes in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Precision {
    /// IEEE binary32.
    F32,
    /// IEEE binary16.
    F16,
    /// bfloat16.
    BF16,
}

impl Precision {
    /// The precision of a float dtype; panics on a dtype the table has no entry for.
    pub fn of(dtype: DType) -> Self {
        match dtype {
            DType::F32 | DType::Flex32 => Self::F32,
            DType::F16 => Self::F16,
            DType::BF16 => Self::BF16,
            other => panic!("the tolerance table has no entry for dtype {other:?}"),
        }
    }

    /// Rounds an f64 to this precision (the best answer a backend of this precision can give).
    pub fn round(self, x: f64) -> f64 {
        match self {
            Self::F32 => x as f32 as f64,
            Self::F16 => burn::tensor::f16::from_f64(x).to_f64(),
            Self::BF16 => burn::tensor::bf16::from_f64(x).to_f64(),
        }
    }
}

/// Forward outputs, or gradients from the backward pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pass {
    /// Outputs of the op itself.
    Forward,
    /// Gradients of the op's inputs and parameters.
    Backward,
}

/// A bound `|got − expected| ≤ abs + rel·|expected|`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tolerance {
    /// Relative bound.
    pub rel: f64,
    /// Absolute floor, for values near zero.
    pub abs: f64,
}

impl Tolerance {
    /// How far `got` is from `expected`, in units of this tolerance (≤ 1 passes). NaN against a
    /// number, or infinities of different sign, are infinitely far.
    pub fn excess(&self, got: f64, expected: f64) -> f64 {
        if got.is_nan() || expected.is_nan() {
            return if got.is_nan() && expected.is_nan() {
                0.0
            } else {
                f64::INFINITY
            };
        }
        if got == expected {
            return 0.0; // covers equal infinities
        }
        (got - expected).abs() / (self.abs + self.rel * expected.abs())
    }
}

/// The table. Every entry says why it is what it is.
pub const fn tolerance(kind: OpKind, precision: Precision, pass: Pass) -> Tolerance {
    use OpKind::*;
    use Pass::*;
    use Precision::*;
    match (precision, kind, pass) {
        // f32 ε = 1.2e-7. An elementwise op rounds once, but transcendental functions are not
        // correctly rounded: WGSL allows exp/log a few ulp (more for large |x|), and lavapipe
        // computes tanh and erf from exp, which loses relative accuracy near 0. 1e-5 leaves
        // ~80 ulp; the floor covers tanh/erf/gelu outputs that are ~1e-3 and smaller.
        (F32, Elementwise, Forward) => Tolerance {
            rel: 1e-5,
            abs: 1e-6,
        },
        // One notch looser: backward formulas chain 2–4 elementwise ops (gelu' = Φ(x) + xφ(x),
        // sigmoid' = s(1 − s), x^p' = p·x^(p−1)), and broadcasting sums the upstream gradient
        // over the broadcast dimensions, so reduction rounding enters too.
        (F32, Elementwise, Backward) => Tolerance {
            rel: 1e-4,
            abs: 1e-5,
        },
        // Sums over n ≤ 127 terms of unit scale: the backend may add in any order (tree, blocked,
        // vectorised), which gives errors of order √n·ε·Σ|x| ≈ 1e-5 on a result that can cancel
        // to ~1; softmax and batch norm divide by such sums.
        (F32, Reduction, Forward) => Tolerance {
            rel: 1e-4,
            abs: 1e-5,
        },
        // One notch looser: gradients of normalisations (softmax, log_softmax, batch norm,
        // cross entropy) subtract two nearly equal sums, e.g. g − Σ(g·s)·s.
        (F32, Reduction, Backward) => Tolerance {
            rel: 1e-3,
            abs: 1e-4,
        },
        // Dot products of length k ≤ 127 (matmul inner size, Cin·kh·kw for conv) with unit-scale
        // terms: results are ~√k in size, GPU kernels accumulate in tiles and in any order, and
        // a result can cancel to ~0, so the floor is as large as the relative bound.
        (F32, Contraction, Forward) => Tolerance {
            rel: 1e-4,
            abs: 1e-4,
        },
        // One notch looser: weight gradients are dot products over batch × spatial positions
        // (longer than the forward's), and input gradients of strided convolutions sum
        // overlapping windows.
        (F32, Contraction, Backward) => Tolerance {
            rel: 1e-3,
            abs: 1e-3,
        },

        // f16 ε = 9.8e-4: one rounding of the output is already 5e-4 relative; backends
        // accumulate reductions and dot products in f32, so the output rounding dominates.
        (F16, _, Forward) => Tolerance {
            rel: 1e-2,
            abs: 1e-3,
        },
        // One notch looser for halves is ×2, not ×10: a ×10 notch would accept wrong answers.
        // Backward chains a few f16 roundings of values of unit scale.
        (F16, _, Backward) => Tolerance {
            rel: 2e-2,
            abs: 2e-3,
        },
        // bf16 ε = 7.8e-3 (8-bit mantissa): one rounding is up to 3.9e-3 relative, and an op
        // whose inputs were rounded to bf16 sees several of them.
        (BF16, _, Forward) => Tolerance {
            rel: 2e-2,
            abs: 2e-3,
        },
        // One notch (×2) looser, as for f16.
        (BF16, _, Backward) => Tolerance {
            rel: 4e-2,
            abs: 4e-3,
        },
    }
}

/// A step of a short training run compared between mixed precision and f32.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrainingStep {
    /// The loss of the first step: same weights, same batch, forward only.
    First,
    /// The loss of the second step: after one forward, backward and optimizer step.
    Second,
    /// The loss of the last step of a run of a few steps.
    Last,
}

/// The training row: how far the loss of a mixed-precision run (autocast in `precision`, f32
/// master weights) may be from the same run in f32, step by step.
///
/// The first step is a forward pass of a batch norm network ending in a cross-entropy: the
/// forward row of a reduction. The second step adds one backward pass and one update: the
/// backward row. Later steps are not bounded by rounding: a small ResNet with batch norm is
/// sensitive to perturbations of the size of half-precision rounding (measured on the tiny
/// ResNet-18 of the training tests: relative input perturbations of 1e-5 change its
/// gradients by 1e-4, of 1e-3 by 10–20%, in f32 alone), so two runs that round differently
/// take different paths through the same descent. What must hold at the last step is that
/// the mixed-precision run learned as much: measured there, bf16 and f16 runs end within 10%
/// of the f32 run (and f32 on two backends within 9% of each other), so the bound is 25%.
pub const fn training_loss_tolerance(precision: Precision, step: TrainingStep) -> Tolerance {
    match step {
        TrainingStep::First => tolerance(OpKind::Reduction, precision, Pass::Forward),
        TrainingStep::Second => tolerance(OpKind::Reduction, precision, Pass::Backward),
        TrainingStep::Last => Tolerance {
            rel: 0.25,
            abs: 1e-3,
        },
    }
}

/// The element furthest outside (or least inside) the tolerance.
#[derive(Clone, Debug)]
pub struct Worst {
    /// Position in the tensor, one index per dimension.
    pub index: Vec<usize>,
    /// The value of the backend under test.
    pub got: f64,
    /// The reference value, rounded to the precision under test.
    pub expected: f64,
    /// `|got − expected|`.
    pub abs_err: f64,
    /// `|got − expected| / |expected|`.
    pub rel_err: f64,
    /// `abs_err` in units of the tolerance (> 1 fails).
    pub excess: f64,
}

/// A comparison that failed: what was compared, and its worst element.
#[derive(Clone, Debug)]
pub struct Mismatch {
    /// What was compared, e.g. `"matmul: grad of lhs"`.
    pub what: String,
    /// Shape of the compared tensors.
    pub shape: Vec<usize>,
    /// Number of elements outside the tolerance.
    pub failing: usize,
    /// The tolerance applied.
    pub tolerance: Tolerance,
    /// The worst element; `None` when the shapes or lengths differ.
    pub worst: Option<Worst>,
    /// Set when the tensors cannot be compared element by element.
    pub note: Option<String>,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {:?}: ", self.what, self.shape)?;
        if let Some(note) = &self.note {
            return write!(f, "{note}");
        }
        let total: usize = self.shape.iter().product();
        write!(
            f,
            "{} of {} elements outside rel {:e} / abs {:e}",
            self.failing, total, self.tolerance.rel, self.tolerance.abs
        )?;
        if let Some(w) = &self.worst {
            write!(
                f,
                "; worst at {:?}: got {:e}, expected {:e}, abs err {:.3e}, rel err {:.3e} ({:.1}× the tolerance)",
                w.index, w.got, w.expected, w.abs_err, w.rel_err, w.excess
            )?;
        }
        Ok(())
    }
}

/// Position of flat index `flat` in a row-major tensor of shape `shape`.
pub fn unravel(mut flat: usize, shape: &[usize]) -> Vec<usize> {
    let mut index = vec![0; shape.len()];
    for (i, dim) in shape.iter().enumerate().rev() {
        if *dim > 0 {
            index[i] = flat % dim;
            flat /= dim;
        }
    }
    index
}

/// Compares `got` against `expected` (row-major, of shape `shape`) element by element.
///
/// `expected` is rounded to `precision` first. Returns the worst element on success, for
/// reporting margins, and a [`Mismatch`] naming the worst element on failure.
// A failed comparison is the rare, reported path; its size does not matter.
#[allow(clippy::result_large_err)]
pub fn compare(
    what: &str,
    shape: &[usize],
    got: &[f64],
    expected: &[f64],
    precision: Precision,
    tolerance: Tolerance,
) -> Result<Option<Worst>, Mismatch> {
    let numel: usize = shape.iter().product();
    if got.len() != numel || expected.len() != numel {
        return Err(Mismatch {
            what: what.to_string(),
            shape: shape.to_vec(),
            failing: numel,
            tolerance,
            worst: None,
            note: Some(format!(
                "lengths differ: got {} values, expected {}, shape holds {numel}",
                got.len(),
                expected.len()
            )),
        });
    }
    let mut failing = 0;
    let mut worst: Option<Worst> = None;
    for (i, (g, e)) in got.iter().zip(expected).enumerate() {
        let e = precision.round(*e);
        let excess = tolerance.excess(*g, e);
        if excess > 1.0 {
            failing += 1;
        }
        if worst.as_ref().is_none_or(|w| excess > w.excess) {
            let abs_err = (g - e).abs();
            worst = Some(Worst {
                index: unravel(i, shape),
                got: *g,
                expected: e,
                abs_err,
                rel_err: if e == 0.0 { abs_err } else { abs_err / e.abs() },
                excess,
            });
        }
    }
    if failing == 0 {
        Ok(worst)
    } else {
        Err(Mismatch {
            what: what.to_string(),
            shape: shape.to_vec(),
            failing,
            tolerance,
            worst,
            note: None,
        })
    }
}

/// [`compare`], panicking with the worst element on failure.
pub fn assert_close(
    what: &str,
    shape: &[usize],
    got: &[f64],
    expected: &[f64],
    precision: Precision,
    tolerance: Tolerance,
) {
    if let Err(mismatch) = compare(what, shape, got, expected, precision, tolerance) {
        panic!("{mismatch}");
    }
}
