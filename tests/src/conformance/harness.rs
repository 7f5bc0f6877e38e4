//! Runs one op on a backend under test and on the reference, forward and backward, and compares.
//!
//! A [`Case`] is written once, generic over the backend. The harness runs it twice, on the
//! backend under test `B` and on [`Reference`] (`Autodiff<NdArray<f64>>`), with the same host
//! data: inputs come from [`Inputs`], whose seeded RNG gives both runs the same numbers. The
//! loss is `Σ (out · g)` over the differentiable outputs, with a random upstream gradient `g`
//! per output, so every input gradient is checked against a generic upstream gradient rather
//! than against ones. Outputs are compared with the forward entry of the tolerance table,
//! gradients with the backward entry (see [`crate::tolerance`]).

use crate::rng::HostRng;
use crate::tolerance::{self, Mismatch, OpKind, Pass, Precision};
use burn::backend::{Autodiff, NdArray};
use burn::module::Param;
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::{Bool, Int, Tensor, TensorData};

/// The reference every backend is compared against: NdArray in f64, with Burn's autodiff.
pub type Reference = Autodiff<NdArray<f64>>;

/// Acc ops a check expects to have run, with a minimum count: `("float_matmul", 3)`.
///
/// For `Acc` stacks the suite asserts these counts after the check, so a check cannot pass on a
/// stack that bypassed `Acc`.
pub type Routes = &'static [(&'static str, u64)];

/// One op under test, written once for every backend.
pub trait Case {
    /// Builds inputs with `x`, runs the op, and hands its results to `out`.
    fn run<C: AutodiffBackend>(&self, x: &mut Inputs<C>, out: &mut Outputs<C>);
}

type GradReader<C> = Box<dyn Fn(&<C as AutodiffBackend>::Gradients) -> Option<TensorData>>;

struct Tracked<C: AutodiffBackend> {
    name: String,
    shape: Vec<usize>,
    grad: GradReader<C>,
}

/// Builds a case's inputs from host data, and remembers which ones need gradients.
pub struct Inputs<C: AutodiffBackend> {
    device: C::Device,
    rng: HostRng,
    tracked: Vec<Tracked<C>>,
    reference: bool,
}

impl<C: AutodiffBackend> Inputs<C> {
    fn new(device: &C::Device, seed: u64, reference: bool) -> Self {
        Self {
            device: device.clone(),
            rng: HostRng::new(seed),
            tracked: Vec::new(),
            reference,
        }
    }

    /// The device the case runs on.
    pub fn device(&self) -> &C::Device {
        &self.device
    }

    /// Whether this run computes the reference. A case may build the reference from more basic
    /// ops where the reference backend's own op is known to be wrong (say why at the call).
    pub fn is_reference(&self) -> bool {
        self.reference
    }

    /// A leaf tensor of `values` with gradient tracking; its gradient is compared.
    pub fn leaf<const D: usize>(
        &mut self,
        name: &str,
        shape: [usize; D],
        values: Vec<f32>,
    ) -> Tensor<C, D> {
        let tensor =
            Tensor::<C, D>::from_data(TensorData::new(values, shape), &self.device).require_grad();
        self.track(name, &tensor);
        tensor
    }

    /// A leaf of standard normal values; its gradient is compared.
    pub fn normal<const D: usize>(&mut self, name: &str, shape: [usize; D]) -> Tensor<C, D> {
        let values = self.rng.normal_vec(shape.iter().product(), 1.0);
        self.leaf(name, shape, values)
    }

    /// A leaf of values uniform in `[low, high)`; its gradient is compared.
    pub fn uniform<const D: usize>(
        &mut self,
        name: &str,
        shape: [usize; D],
        low: f32,
        high: f32,
    ) -> Tensor<C, D> {
        let values = self.rng.uniform_vec(shape.iter().product(), low, high);
        self.leaf(name, shape, values)
    }

    /// A module parameter of normal values times `scale`; its gradient is compared.
    pub fn param<const D: usize>(
        &mut self,
        name: &str,
        shape: [usize; D],
        scale: f32,
    ) -> Param<Tensor<C, D>> {
        let values = self.rng.normal_vec(shape.iter().product(), scale);
        Param::from_tensor(self.leaf(name, shape, values))
    }

    /// A module parameter of values uniform in `[low, high)`; its gradient is compared.
    pub fn param_uniform<const D: usize>(
        &mut self,
        name: &str,
        shape: [usize; D],
        low: f32,
        high: f32,
    ) -> Param<Tensor<C, D>> {
        Param::from_tensor(self.uniform(name, shape, low, high))
    }

    /// An integer tensor of values uniform in `[0, high)` (indices, class targets).
    pub fn indices<const D: usize>(&mut self, shape: [usize; D], high: usize) -> Tensor<C, D, Int> {
        let n: usize = shape.iter().product();
        let values: Vec<i64> = (0..n).map(|_| self.rng.below(high as u64) as i64).collect();
        Tensor::from_data(TensorData::new(values, shape), &self.device)
    }

    /// A boolean tensor, each element true with probability `p`.
    pub fn mask<const D: usize>(&mut self, shape: [usize; D], p: f64) -> Tensor<C, D, Bool> {
        let n: usize = shape.iter().product();
        let values: Vec<bool> = (0..n).map(|_| self.rng.next_f64() < p).collect();
        Tensor::from_data(TensorData::new(values, shape), &self.device)
    }

    /// Compares the gradient of `tensor` (a tracked leaf) under `name`.
    pub fn track<const D: usize>(&mut self, name: &str, tensor: &Tensor<C, D>) {
        let leaf = tensor.clone();
        self.tracked.push(Tracked {
            name: name.to_string(),
            shape: tensor.dims().to_vec(),
            grad: Box::new(move |grads| leaf.grad(grads).map(|g| g.into_data())),
        });
    }
}

struct Read<C: AutodiffBackend> {
    name: String,
    shape: Vec<usize>,
    tensor: Tensor<C, 1>,
}

/// Collects a case's results: outputs that enter the loss, and state that is only compared.
pub struct Outputs<C: AutodiffBackend> {
    device: C::Device,
    upstream: HostRng,
    reads: Vec<Read<C>>,
    loss: Option<Tensor<C, 1>>,
}

impl<C: AutodiffBackend> Outputs<C> {
    fn new(device: &C::Device, seed: u64) -> Self {
        Self {
            device: device.clone(),
            upstream: HostRng::new(seed),
            reads: Vec::new(),
            loss: None,
        }
    }

    /// A differentiable output: compared, and `Σ (out · g)` with a random `g` joins the loss.
    pub fn push<const D: usize>(&mut self, name: &str, out: Tensor<C, D>) {
        let shape = out.dims();
        let g = self.upstream.normal_vec(shape.iter().product(), 1.0);
        let g = Tensor::<C, D>::from_data(TensorData::new(g, shape), &self.device);
        let term = (out.clone() * g).sum();
        self.loss = Some(match self.loss.take() {
            Some(loss) => loss + term,
            None => term,
        });
        self.state(name, out);
    }

    /// A result that is compared but not differentiated (e.g. batch norm's running statistics).
    pub fn state<const D: usize>(&mut self, name: &str, out: Tensor<C, D>) {
        let shape = out.dims().to_vec();
        let n: usize = shape.iter().product();
        self.reads.push(Read {
            name: name.to_string(),
            shape,
            tensor: out.reshape([n]),
        });
    }
}

/// A named tensor read back to the host.
#[derive(Clone, Debug)]
pub struct Named {
    /// Output or input name given by the case.
    pub name: String,
    /// Shape of the tensor.
    pub shape: Vec<usize>,
    /// Values, row-major; `None` for an input that received no gradient.
    pub values: Option<Vec<f64>>,
}

/// Everything one run of a case produced.
#[derive(Clone, Debug)]
pub struct Run {
    /// Outputs and state, in the order the case gave them.
    pub outputs: Vec<Named>,
    /// Gradients of the tracked inputs, in the order they were created.
    pub grads: Vec<Named>,
}

fn host(data: TensorData) -> Vec<f64> {
    data.iter::<f64>().collect()
}

/// Runs `case` on backend `C`: forward, backward of `Σ (out · g)`, read back.
///
/// `reference` tells the case whether this run is the reference ([`Inputs::is_reference`]).
pub fn execute<C: AutodiffBackend, K: Case>(
    case: &K,
    device: &C::Device,
    seed: u64,
    reference: bool,
) -> Run {
    let mut inputs = Inputs::<C>::new(device, seed, reference);
    // A second stream for the upstream gradients, so adding an input to a case does not
    // change the upstream gradients of its outputs.
    let mut outputs = Outputs::<C>::new(device, seed ^ 0x005E_ED0F_6AAD);
    case.run(&mut inputs, &mut outputs);

    let grads = outputs.loss.take().map(|loss| loss.backward());
    let outputs_read = outputs
        .reads
        .into_iter()
        .map(|r| Named {
            name: r.name,
            shape: r.shape,
            values: Some(host(r.tensor.into_data())),
        })
        .collect();
    let grads_read = inputs
        .tracked
        .iter()
        .map(|t| Named {
            name: t.name.clone(),
            shape: t.shape.clone(),
            values: grads.as_ref().and_then(|g| (t.grad)(g)).map(host),
        })
        .collect();
    Run {
        outputs: outputs_read,
        grads: grads_read,
    }
}

/// Whether to print how much of its tolerance every passing comparison used
/// (`BURNACC_TEST_MARGINS=1`), to calibrate the table.
fn report_margins() -> bool {
    std::env::var_os("BURNACC_TEST_MARGINS").is_some_and(|v| v == "1")
}

/// Compares a run of the backend under test against the reference run.
pub fn compare_runs(
    op: &str,
    kind: OpKind,
    precision: Precision,
    got: &Run,
    want: &Run,
) -> Vec<Mismatch> {
    let mut failures = Vec::new();
    let sets = [
        (Pass::Forward, &got.outputs, &want.outputs, "output"),
        (Pass::Backward, &got.grads, &want.grads, "grad of"),
    ];
    for (pass, got, want, label) in sets {
        let tol = tolerance::tolerance(kind, precision, pass);
        assert_eq!(
            got.len(),
            want.len(),
            "{op}: the runs produced different numbers of {label} tensors"
        );
        for (g, w) in got.iter().zip(want) {
            let what = format!("{op}: {label} {}", g.name);
            match (&g.values, &w.values) {
                (Some(gv), Some(wv)) if g.shape == w.shape => {
                    match tolerance::compare(&what, &g.shape, gv, wv, precision, tol) {
                        Err(m) => failures.push(m),
                        Ok(Some(worst)) if report_margins() => eprintln!(
                            "margin {:>7.4} of the tolerance: {what} (worst at {:?}: got {:e}, expected {:e})",
                            worst.excess, worst.index, worst.got, worst.expected
                        ),
                        Ok(_) => {}
                    }
                }
                (None, None) => {}
                (gv, wv) => failures.push(Mismatch {
                    what,
                    shape: g.shape.clone(),
                    failing: g.shape.iter().product(),
                    tolerance: tol,
                    worst: None,
                    note: Some(format!(
                        "got shape {:?} ({}), expected shape {:?} ({})",
                        g.shape,
                        if gv.is_some() { "present" } else { "absent" },
                        w.shape,
                        if wv.is_some() { "present" } else { "absent" },
                    )),
                }),
            }
        }
    }
    failures
}

/// Seed of a case's inputs: a hash of its name, so each case gets its own data and the data of
/// one case does not depend on which other cases exist.
pub fn seed_of(name: &str) -> u64 {
    // FNV-1a.
    name.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

/// A known defect of some backends: the comparison it spoils is reported, not failed.
///
/// An exemption is precise and expires by itself: it names one comparison, applies only to the
/// backends it names, must still hold within a looser `bound` (so a worse breakage still fails),
/// and fails once the defect no longer reproduces, so it is removed when Burn is fixed.
#[derive(Clone, Copy, Debug)]
pub struct KnownIssue {
    /// Substrings of `Backend::name` the defect applies to, e.g. `"ndarray"`, `"cubecl"`.
    pub backends: &'static [&'static str],
    /// The comparison it spoils, as failure messages name it: `"gelu: grad of x"`.
    pub what: &'static str,
    /// How far off the defect makes the result; beyond this the comparison fails anyway.
    pub bound: tolerance::Tolerance,
    /// What is wrong, and where.
    pub reason: &'static str,
}

impl KnownIssue {
    fn applies_to(&self, backend: &str) -> bool {
        self.backends.iter().any(|b| backend.contains(b))
    }
}

/// Runs `case` on `B` and on the reference and panics with every mismatch (worst element each),
/// except those excused by a [`KnownIssue`] of `B`.
pub fn check<B: AutodiffBackend, K: Case>(
    device: &B::Device,
    op: &str,
    kind: OpKind,
    known: &[KnownIssue],
    case: &K,
) {
    let seed = seed_of(op);
    let backend = B::name(device);
    let got = execute::<B, K>(case, device, seed, false);
    let want = execute::<Reference, K>(case, &Default::default(), seed, true);
    let mut failures: Vec<String> = Vec::new();
    let known: Vec<&KnownIssue> = known.iter().filter(|k| k.applies_to(&backend)).collect();
    let mut reproduced = vec![false; known.len()];
    for mismatch in compare_runs(op, kind, Precision::F32, &got, &want) {
        match known.iter().position(|k| k.what == mismatch.what) {
            Some(i) => {
                reproduced[i] = true;
                eprintln!(
                    "known issue on {backend}: {mismatch}\n  ({})",
                    known[i].reason
                );
            }
            None => failures.push(mismatch.to_string()),
        }
    }
    for (issue, reproduced) in known.iter().zip(reproduced) {
        if !reproduced {
            failures.push(format!(
                "{}: known issue no longer reproduces on {backend}; remove its exemption ({})",
                issue.what, issue.reason
            ));
            continue;
        }
        // Still wrong, but only by as much as the known defect explains.
        let (got, want) = find(&got, &want, op, issue.what);
        let shape = &got.shape;
        let (g, w) = (
            got.values.as_deref().unwrap_or(&[]),
            want.values.as_deref().unwrap_or(&[]),
        );
        if let Err(m) = tolerance::compare(issue.what, shape, g, w, Precision::F32, issue.bound) {
            failures.push(format!(
                "{m} — worse than the known issue explains ({})",
                issue.reason
            ));
        }
    }
    if !failures.is_empty() {
        let lines: Vec<String> = failures.iter().map(|m| format!("  {m}")).collect();
        panic!(
            "{op} on {backend} differs from the f64 reference:\n{}",
            lines.join("\n")
        );
    }
}

/// The output or gradient pair named `what` (`"{op}: output {name}"`, `"{op}: grad of {name}"`).
fn find<'a>(got: &'a Run, want: &'a Run, op: &str, what: &str) -> (&'a Named, &'a Named) {
    let sets = [
        ("output", &got.outputs, &want.outputs),
        ("grad of", &got.grads, &want.grads),
    ];
    for (label, g, w) in sets {
        for (g, w) in g.iter().zip(w) {
            if format!("{op}: {label} {}", g.name) == what {
                return (g, w);
            }
        }
    }
    panic!("known issue names `{what}`, which {op} does not produce")
}
