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

// Named bounds outside the op table.
//
// Tests that do not go through `compare` (kernel tests against their plain-Burn references,
// model tests against PyTorch fixtures, optimizer and training checks) take their bound from
// here by name. Unless an entry says otherwise a scalar bound is on the worst element of a
// tensor relative to the tensor's largest reference magnitude,
// `max |got − expected| / max |expected|`; a `Tolerance` entry is element-wise,
// `|got − expected| ≤ abs + rel·|expected|`, as in the table. Each entry says why it is what it
// is; none may be loosened to make a test pass.

/// A fused f32 kernel's forward outputs against its plain-Burn reference on `NdArray<f64>`
/// (LayerNorm's `y`; bias + dropout + add's `y` and `dx`, and its inference form), relative to
/// the largest reference value. LayerNorm reduces rows of up to 4097 elements in f32 for its
/// mean and variance, in an order of its own; 1e-5 is about 80 f32 ulps (ε = 1.2e-7) of the
/// largest output.
pub const FUSED_F32_FORWARD: f64 = 1e-5;

/// A fused f32 kernel's gradients against the plain-Burn reference backward on `NdArray<f64>`
/// (LayerNorm's `dx`, `dgamma`, `dbeta`; bias + dropout + add's `dbias`), relative to the
/// largest reference value. One notch looser than [`FUSED_F32_FORWARD`]: LayerNorm's `dx`
/// subtracts two row means of the upstream gradient, and `dgamma`, `dbeta` and `dbias` sum
/// over every row (up to 4097 of them) in a two-stage column reduction.
pub const FUSED_F32_GRADIENT: f64 = 1e-4;

/// A fused f32 elementwise or row kernel against its plain-Burn reference on `NdArray<f64>`,
/// forward and backward, relative to the largest reference value: the GELUs (QuickGELU and the
/// erf GELU with its bias; eager, through Fusion and through Autodiff) and Swin's
/// window-attention softmax. Each output is a short f32 formula (for the softmax, `exp` and a sum over one
/// window row of at most 49 scores; for the GELU's bias gradient, a column sum), so the error
/// is a few f32 roundings and the `erf` polyfill's 1.5e-7.
pub const FUSED_ELEMENTWISE_F32: f64 = 2e-6;

/// The kernels of [`FUSED_ELEMENTWISE_F32`] with f16 storage, against a reference fed the same
/// f16-rounded inputs: one f16 rounding of the output (2⁻¹¹ = 4.9e-4 relative) dominates, and
/// 2e-3 allows four of them.
pub const FUSED_ELEMENTWISE_F16: f64 = 2e-3;

/// A hand-written backward against Burn's autodiff of the same op's decomposition, both on
/// `NdArray<f64>` (the softmax node's `dx = y ⊙ (dy − Σ dy ⊙ y)` against the five recorded
/// ops), relative to the largest reference value: the same maths in a different order, a few
/// f64 roundings (ε = 2.2e-16) of values of order one.
pub const ANALYTIC_BACKWARD_F64: f64 = 1e-12;

/// A fused kernel with f16 storage (computing in f32) against a reference fed the original
/// f32 inputs (LayerNorm's outputs and gradients; bias + dropout + add on CubeCL and on Flex):
/// the f16 rounding of every input enters as well as that of the output, and LayerNorm
/// divides by the row's standard deviation and sums gradients over rows, so 1e-2 (about ten
/// f16 ε) rather than [`FUSED_ELEMENTWISE_F16`]'s single rounding.
pub const FUSED_F16_STORAGE: f64 = 1e-2;

/// The multi-tensor Adam/AdamW and SGD kernels (CubeCL, the Fusion custom op, the Flex loop)
/// against the plain-Burn reference on `NdArray<f64>`: the parameter change `p' − p` relative
/// to the reference update (after allowing 8 ulps of `p`), and the moments relative to their
/// largest value. The update is an f32 formula of a few ops per element, so a few ulps of it.
pub const FUSED_OPTIMIZER_F32: f64 = 1e-5;

/// An f32 implementation against a PyTorch fixture (torchvision, timm, transformers, recorded
/// in f32 or float64), relative to the reference tensor's largest magnitude: the ResNet and
/// Swin forward passes and their stage outputs, MiniLM's hidden states, one training step's
/// logits, loss and gradients, and torchvision's deformable convolution (forward and
/// gradients). Two f32 implementations of tens of matmuls, reductions and transcendental
/// functions accumulate in different orders: Swin's stage outputs (up to 7.4) are measured
/// within 5.2e-6 of timm's, while PyTorch's own f32 gradients are up to 3.1e-4 of the scale
/// off float64 on the ResNet (the gradient test then allows twice PyTorch's own error). A
/// misnamed, mis-transposed or wrong tensor is off by far more.
pub const PYTORCH_FIXTURE_F32: f64 = 1e-4;

/// Swin's logits against timm's (f32, about 20 matmuls and softmaxes deep), as an absolute
/// bound on `max |got − expected|` rather than a relative one: the logits are up to 2.9 in
/// magnitude, and measured errors on Flex and NdArray are ≤ 1.1e-6.
pub const TIMM_SWIN_LOGITS_ABS: f64 = 1e-4;

/// With [`PYTORCH_FIXTURE_F32`] on gradients: each gradient is compared relative to at least
/// this fraction of the model's largest gradient. Below it a gradient is rounding noise
/// (BERT's key bias has a zero gradient in exact arithmetic, since softmax ignores a constant
/// added to every score), and a relative bound on it would compare noise with noise.
pub const GRADIENT_SCALE_FLOOR: f64 = 1e-3;

/// burnacc-amp's sync-free SGD, Adam and AdamW in f32, element-wise after each of 6 steps
/// (parameters, momentum buffers, `exp_avg`), against PyTorch's update formulas evaluated in
/// f64 and against Burn's own `burn::optim` optimizers (the same functions, in f32): each step
/// rounds a short f32 formula (ε = 1.2e-7) and the errors of earlier steps carry over, so 1e-5
/// relative; the floor 1e-7, about an f32 ulp at unit scale, covers elements near zero, where
/// a relative bound means nothing.
pub const SYNC_FREE_OPTIMIZER_F32: Tolerance = Tolerance {
    rel: 1e-5,
    abs: 1e-7,
};

/// [`SYNC_FREE_OPTIMIZER_F32`] for Adam's second moment `exp_avg_sq`, which is of order
/// `g²·(1 − β₂)` ≈ 1e-4: the absolute floor is scaled down to it (1e-12), so that the floor
/// does not swallow the value.
pub const SYNC_FREE_OPTIMIZER_F32_SECOND_MOMENT: Tolerance = Tolerance {
    rel: 1e-5,
    abs: 1e-12,
};

/// Logits under bf16 autocast against the exact (float64) logits of the same forward pass,
/// relative to their scale (the test also accepts three times PyTorch's own bf16 error, when
/// larger). bf16 keeps 8 bits of mantissa (ε = 7.8e-3, one rounding up to 3.9e-3 relative) and
/// a forward pass rounds many matmul outputs; this is the table's bf16 forward bound. Measured:
/// ResNet 3.6e-3, Swin 3.0e-3, BERT-base 2.6e-2 (within three times PyTorch's 1.1e-2).
pub const BF16_AUTOCAST_LOGITS: f64 = 2e-2;

/// u8 pixels normalised on the device against the host normalisation, as an absolute bound in
/// f32 (the test's own type): a few ulps of the largest normalised value (|x| < 2.7 for
/// ImageNet statistics, ulp 2.4e-7): the two differ by f32 rounding only.
pub const DEVICE_NORMALIZE_F32: f32 = 1e-6;

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
