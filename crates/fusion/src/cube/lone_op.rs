//! An op that no fuser takes (a module op: a convolution, a pooling, their backward; a custom
//! op: one of burnacc's kernels) that leads a block, taken alone.
//!
//! Burn's stream groups the ops that share tensors into blocks and offers each block's ops to
//! the fusers from the block's start. When no fuser is ready there, it runs every op it
//! explored in the block unfused. No fuser starts with a convolution or a custom op, so what
//! follows one ran op by op: the batch norm behind each convolution (its statistics, the
//! normalisation, the running averages: a dozen ops), the residual add and scalings behind a
//! LayerNorm or GELU kernel. Taking the op alone as a one-op "optimization" makes the stream
//! explore the ops behind it again, from a start the other fusers can take.
//!
//! Only those two kinds are taken: a block led by one can neither fuse nor merge into a block
//! that fuses (every fuser closes on it), so making it ready changes nothing else in Burn's
//! choice of blocks (`burn-fusion`'s `Block::merge` keeps merges whose result becomes ready).

use crate::counters;
use crate::cube::{CubeAccOptimization, CubeAccRuntime};
use burn::backend::ir::OperationIr;
use burn_cubecl::CubeRuntime;
use burn_cubecl_fusion::CubeFusionHandle;
use burn_fusion::stream::{Context, OrderedExecution};
use burn_fusion::{FuserProperties, FuserStatus, OperationFuser};
use core::marker::PhantomData;

/// Which kind of op no fuser takes led the block.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum LoneOpKind {
    /// A convolution, pooling or other `OperationIr::Module`.
    Module,
    /// A custom op (`OperationIr::Custom`): one of burnacc's kernels.
    Custom,
}

impl LoneOpKind {
    /// The kind of `operation`, if no fuser takes it.
    fn of(operation: &OperationIr) -> Option<Self> {
        match operation {
            OperationIr::Module(_) => Some(Self::Module),
            OperationIr::Custom(_) => Some(Self::Custom),
            _ => None,
        }
    }
}

/// Takes a block's first op when no fuser takes it, and nothing more. Ready with the lowest
/// score, so that it only ever runs where no other fuser is ready.
pub(crate) struct LoneOpFuser<R: CubeRuntime> {
    taken: Option<LoneOpKind>,
    status: FuserStatus,
    _runtime: PhantomData<R>,
}

impl<R: CubeRuntime> LoneOpFuser<R> {
    pub(crate) fn new() -> Self {
        Self {
            taken: None,
            status: FuserStatus::Open,
            _runtime: PhantomData,
        }
    }
}

impl<R: CubeRuntime> Clone for LoneOpFuser<R> {
    fn clone(&self) -> Self {
        Self {
            taken: self.taken,
            status: self.status,
            _runtime: PhantomData,
        }
    }
}

impl<R: CubeRuntime> OperationFuser<CubeAccOptimization<R>> for LoneOpFuser<R> {
    fn fuse(&mut self, operation: &OperationIr) {
        if self.status == FuserStatus::Open && self.taken.is_none() {
            self.taken = LoneOpKind::of(operation);
        }
        self.status = FuserStatus::Closed;
    }

    fn finish(&mut self) -> CubeAccOptimization<R> {
        let kind = self.taken.expect("an op no fuser takes, to run");
        CubeAccOptimization::LoneOp(LoneOpOptimization::new(kind))
    }

    fn reset(&mut self) {
        self.taken = None;
        self.status = FuserStatus::Open;
    }

    fn status(&self) -> FuserStatus {
        self.status
    }

    fn properties(&self) -> FuserProperties {
        FuserProperties {
            score: 1,
            ready: self.taken.is_some(),
        }
    }

    fn len(&self) -> usize {
        usize::from(self.taken.is_some())
    }

    fn clone_dyn(&self) -> Box<dyn OperationFuser<CubeAccOptimization<R>>> {
        Box::new(self.clone())
    }
}

/// Runs the op as Burn would have, unfused (it has no state to save but its kind).
pub struct LoneOpOptimization<R: CubeRuntime> {
    kind: LoneOpKind,
    _runtime: PhantomData<R>,
}

impl<R: CubeRuntime> core::fmt::Debug for LoneOpOptimization<R> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_tuple("LoneOpOptimization")
            .field(&self.kind)
            .finish()
    }
}

impl<R: CubeRuntime> LoneOpOptimization<R> {
    /// The optimization (also its restored state).
    pub fn new(kind: LoneOpKind) -> Self {
        Self {
            kind,
            _runtime: PhantomData,
        }
    }

    /// The kind of op it runs.
    pub fn kind(&self) -> LoneOpKind {
        self.kind
    }

    /// Runs the op, the only one of the optimization.
    pub fn execute(
        &self,
        context: &mut Context<CubeFusionHandle<R>>,
        execution: &OrderedExecution<CubeAccRuntime<R>>,
    ) {
        execution
            .operation_within_optimization(0)
            .execute(&mut context.handles);
        match self.kind {
            LoneOpKind::Module => counters::CUBE_MODULE_OP_ALONE.bump(),
            LoneOpKind::Custom => counters::CUBE_CUSTOM_OP_ALONE.bump(),
        }
    }
}
