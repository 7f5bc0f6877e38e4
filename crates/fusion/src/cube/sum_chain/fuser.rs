//! The fuser of `sum_dim` / `mean_dim` chains, on Burn's relative IR.

use super::optimization::{ChainLink, SumChain, SumChainOptimization};
use crate::cube::CubeAccOptimization;
use burn::backend::ir::{
    BaseOperationIr, NumericOperationIr, OperationIr, ReduceDimOpIr, ShapeOpIr, SwapDimsOpIr,
    TensorIr, TensorStatus,
};
use burn_cubecl::CubeRuntime;
use burn_fusion::{FuserProperties, FuserStatus, OperationFuser};
use core::marker::PhantomData;

/// Weights of Burn's CubeCL scoring (`burn-cubecl-fusion`'s `Scoring`): a read or write saved
/// counts 100, a launch saved 10, so that burnacc's fusers compete on the same scale.
const SCORE_PER_IO: u64 = 100;
const SCORE_PER_LAUNCH: u64 = 10;

/// Accepts a float `sum_dim` or `mean_dim`, or a leading float `swap_dims` and / or `reshape`
/// view, then each further reduction that reads the previous output for the last time (status
/// `ReadWrite`: nothing else needs the intermediate), then one `reshape` of the result read the
/// same way, and closes on anything else.
///
/// Ready when the chain saves a launch: two reductions or more, a `reshape` of a swapped view
/// (a copy when unfused), or a single reduction over an axis of size 1 (in Burn's relative
/// shapes, size 1 is always shape id 0).
pub(crate) struct SumChainFuser<R: CubeRuntime> {
    chain: Option<SumChain>,
    status: FuserStatus,
    _runtime: PhantomData<R>,
}

impl<R: CubeRuntime> SumChainFuser<R> {
    pub(crate) fn new() -> Self {
        Self {
            chain: None,
            status: FuserStatus::Open,
            _runtime: PhantomData,
        }
    }

    /// Launches the unfused ops take, and the fused chain.
    fn launches(&self) -> (u64, u64) {
        let Some(chain) = &self.chain else {
            return (0, 0);
        };
        if chain.links.is_empty() {
            return (0, 0);
        }
        // A reshape of a swapped view copies it; alone, views cost no launch.
        let copies = u64::from(chain.swap.is_some() && chain.reshaped.is_some());
        let all_unit = chain.links.iter().all(|link| link.unit_axis);
        let fused = u64::from(chain.has_view() || !all_unit);
        (chain.links.len() as u64 + copies, fused)
    }

    /// Takes `operation` into the chain if it can, else says no.
    fn accept(&mut self, operation: &OperationIr) -> bool {
        let Some(step) = Step::of(operation) else {
            return false;
        };
        let chain = match &mut self.chain {
            None => {
                self.chain = Some(SumChain {
                    input: step.input().clone(),
                    output: step.input().clone(),
                    swap: None,
                    reshaped: None,
                    links: Vec::new(),
                    reshaped_output: false,
                });
                self.chain.as_mut().expect("just set")
            }
            Some(chain) => {
                let input = step.input();
                if input.id != chain.output.id || input.status != TensorStatus::ReadWrite {
                    return false;
                }
                chain
            }
        };
        match step {
            Step::Swap(desc) if !chain.has_view() && chain.links.is_empty() => {
                chain.swap = Some((desc.dim1, desc.dim2));
                chain.output = desc.out.clone();
            }
            Step::Reshape(desc) if chain.reshaped.is_none() && chain.links.is_empty() => {
                chain.reshaped = Some(desc.out.clone());
                chain.output = desc.out.clone();
            }
            Step::Reshape(desc) if !chain.links.is_empty() && !chain.reshaped_output => {
                chain.reshaped_output = true;
                chain.output = desc.out.clone();
            }
            Step::Reduce(desc, mean) if !chain.reshaped_output => {
                chain.links.push(ChainLink {
                    axis: desc.axis,
                    mean,
                    unit_axis: desc.input.shape.as_slice().get(desc.axis) == Some(&0),
                });
                chain.output = desc.out.clone();
            }
            _ => return false,
        }
        true
    }
}

impl<R: CubeRuntime> Clone for SumChainFuser<R> {
    fn clone(&self) -> Self {
        Self {
            chain: self.chain.clone(),
            status: self.status,
            _runtime: PhantomData,
        }
    }
}

/// An op a chain can hold.
enum Step<'a> {
    /// A float `swap_dims`.
    Swap(&'a SwapDimsOpIr),
    /// A float `reshape`.
    Reshape(&'a ShapeOpIr),
    /// A float `sum_dim` (`false`) or `mean_dim` (`true`).
    Reduce(&'a ReduceDimOpIr, bool),
}

impl<'a> Step<'a> {
    fn of(operation: &'a OperationIr) -> Option<Self> {
        match operation {
            OperationIr::BaseFloat(BaseOperationIr::SwapDims(desc)) => Some(Step::Swap(desc)),
            OperationIr::BaseFloat(BaseOperationIr::Reshape(desc)) => Some(Step::Reshape(desc)),
            OperationIr::NumericFloat(dtype, op) if dtype.is_float() => match op {
                NumericOperationIr::SumDim(desc) => Some(Step::Reduce(desc, false)),
                NumericOperationIr::MeanDim(desc) => Some(Step::Reduce(desc, true)),
                _ => None,
            },
            _ => None,
        }
    }

    fn input(&self) -> &'a TensorIr {
        match self {
            Step::Swap(desc) => &desc.input,
            Step::Reshape(desc) => &desc.input,
            Step::Reduce(desc, _) => &desc.input,
        }
    }
}

impl<R: CubeRuntime> OperationFuser<CubeAccOptimization<R>> for SumChainFuser<R> {
    fn fuse(&mut self, operation: &OperationIr) {
        if self.status == FuserStatus::Closed {
            return;
        }
        if !self.accept(operation) {
            self.status = FuserStatus::Closed;
        }
    }

    fn finish(&mut self) -> CubeAccOptimization<R> {
        let chain = self
            .chain
            .clone()
            .expect("a chain of at least one reduction");
        CubeAccOptimization::SumChain(SumChainOptimization::new(chain))
    }

    fn reset(&mut self) {
        self.chain = None;
        self.status = FuserStatus::Open;
    }

    fn status(&self) -> FuserStatus {
        self.status
    }

    fn properties(&self) -> FuserProperties {
        let (unfused, fused) = self.launches();
        // Each unfused reduction reads and writes a tensor; the fused chain reads and writes
        // one of each per launch.
        let saved_io = 2 * unfused - 2 * fused;
        let score = saved_io * SCORE_PER_IO + (unfused - fused) * SCORE_PER_LAUNCH;
        FuserProperties {
            score,
            ready: unfused > fused,
        }
    }

    fn len(&self) -> usize {
        self.chain.as_ref().map_or(0, SumChain::num_operations)
    }

    fn clone_dyn(&self) -> Box<dyn OperationFuser<CubeAccOptimization<R>>> {
        Box::new(self.clone())
    }
}
