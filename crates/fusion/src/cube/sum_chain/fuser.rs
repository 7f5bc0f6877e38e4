//! The fuser of `sum_dim` / `mean_dim` chains, on Burn's relative IR.

use super::optimization::{ChainLink, SumChain, SumChainOptimization};
use crate::cube::CubeAccOptimization;
use burn::backend::ir::{NumericOperationIr, OperationIr, ReduceDimOpIr, TensorStatus};
use burn_cubecl::CubeRuntime;
use burn_fusion::{FuserProperties, FuserStatus, OperationFuser};
use core::marker::PhantomData;

/// Weights of Burn's CubeCL scoring (`burn-cubecl-fusion`'s `Scoring`): a read or write saved
/// counts 100, a launch saved 10, so that burnacc's fusers compete on the same scale.
const SCORE_PER_IO: u64 = 100;
const SCORE_PER_LAUNCH: u64 = 10;

/// Accepts a float `sum_dim` or `mean_dim`, then each further one that reads the previous
/// output for the last time (status `ReadWrite`: nothing else needs the intermediate), and
/// closes on anything else.
///
/// Ready when the chain saves a launch: two reductions or more, or a single one over an axis of
/// size 1 (in Burn's relative shapes, size 1 is always shape id 0).
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
        match &self.chain {
            None => (0, 0),
            Some(chain) => {
                let fused = if chain.links.iter().all(|link| link.unit_axis) {
                    0
                } else {
                    1
                };
                (chain.links.len() as u64, fused)
            }
        }
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

/// The reduction `operation` is, if a float `sum_dim` (`false`) or `mean_dim` (`true`).
fn reduction(operation: &OperationIr) -> Option<(&ReduceDimOpIr, bool)> {
    let OperationIr::NumericFloat(dtype, op) = operation else {
        return None;
    };
    if !dtype.is_float() {
        return None;
    }
    match op {
        NumericOperationIr::SumDim(desc) => Some((desc, false)),
        NumericOperationIr::MeanDim(desc) => Some((desc, true)),
        _ => None,
    }
}

impl<R: CubeRuntime> OperationFuser<CubeAccOptimization<R>> for SumChainFuser<R> {
    fn fuse(&mut self, operation: &OperationIr) {
        if self.status == FuserStatus::Closed {
            return;
        }
        let Some((desc, mean)) = reduction(operation) else {
            self.status = FuserStatus::Closed;
            return;
        };
        let link = ChainLink {
            axis: desc.axis,
            mean,
            unit_axis: desc.input.shape.as_slice().get(desc.axis) == Some(&0),
        };
        match &mut self.chain {
            None => {
                self.chain = Some(SumChain {
                    input: desc.input.clone(),
                    output: desc.out.clone(),
                    links: vec![link],
                })
            }
            Some(chain)
                if desc.input.id == chain.output.id
                    && desc.input.status == TensorStatus::ReadWrite =>
            {
                chain.output = desc.out.clone();
                chain.links.push(link);
            }
            Some(_) => self.status = FuserStatus::Closed,
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
        self.chain.as_ref().map_or(0, |chain| chain.links.len())
    }

    fn clone_dyn(&self) -> Box<dyn OperationFuser<CubeAccOptimization<R>>> {
        Box::new(self.clone())
    }
}
