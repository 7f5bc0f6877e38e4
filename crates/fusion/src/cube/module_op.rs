//! A module op (a convolution, a pooling, their backward) that leads a block, taken alone.
//!
//! Burn's stream groups the ops that share tensors into blocks and offers each block's ops to
//! the fusers from the block's start. When no fuser is ready there, it runs every op it
//! explored in the block unfused. No fuser starts with a convolution, so the batch norm behind
//! each one (its statistics, the normalisation, the running averages: a dozen ops) ran op by
//! op. Taking the convolution alone as a one-op "optimization" makes the stream explore the
//! ops behind it again, from a start the other fusers can take.
//!
//! Only module ops are taken: a block led by one can neither fuse nor merge into a block that
//! fuses (every fuser closes on it), so making it ready changes nothing else in Burn's choice
//! of blocks (`burn-fusion`'s `Block::merge` keeps merges whose result becomes ready).

use crate::counters;
use crate::cube::{CubeAccOptimization, CubeAccRuntime};
use burn::backend::ir::OperationIr;
use burn_cubecl::CubeRuntime;
use burn_cubecl_fusion::CubeFusionHandle;
use burn_fusion::stream::{Context, OrderedExecution};
use burn_fusion::{FuserProperties, FuserStatus, OperationFuser};
use core::marker::PhantomData;

/// Takes a block's first op when it is a module op, and nothing more. Ready with the lowest
/// score, so that it only ever runs where no other fuser is ready.
pub(crate) struct ModuleOpFuser<R: CubeRuntime> {
    taken: bool,
    status: FuserStatus,
    _runtime: PhantomData<R>,
}

impl<R: CubeRuntime> ModuleOpFuser<R> {
    pub(crate) fn new() -> Self {
        Self {
            taken: false,
            status: FuserStatus::Open,
            _runtime: PhantomData,
        }
    }
}

impl<R: CubeRuntime> Clone for ModuleOpFuser<R> {
    fn clone(&self) -> Self {
        Self {
            taken: self.taken,
            status: self.status,
            _runtime: PhantomData,
        }
    }
}

impl<R: CubeRuntime> OperationFuser<CubeAccOptimization<R>> for ModuleOpFuser<R> {
    fn fuse(&mut self, operation: &OperationIr) {
        if self.status == FuserStatus::Open && !self.taken {
            self.taken = matches!(operation, OperationIr::Module(_));
        }
        self.status = FuserStatus::Closed;
    }

    fn finish(&mut self) -> CubeAccOptimization<R> {
        assert!(self.taken, "a module op to run");
        CubeAccOptimization::ModuleOp(ModuleOpOptimization::new())
    }

    fn reset(&mut self) {
        self.taken = false;
        self.status = FuserStatus::Open;
    }

    fn status(&self) -> FuserStatus {
        self.status
    }

    fn properties(&self) -> FuserProperties {
        FuserProperties {
            score: 1,
            ready: self.taken,
        }
    }

    fn len(&self) -> usize {
        usize::from(self.taken)
    }

    fn clone_dyn(&self) -> Box<dyn OperationFuser<CubeAccOptimization<R>>> {
        Box::new(self.clone())
    }
}

/// Runs the module op as Burn would have, unfused (it has no state to save).
pub struct ModuleOpOptimization<R: CubeRuntime> {
    _runtime: PhantomData<R>,
}

impl<R: CubeRuntime> core::fmt::Debug for ModuleOpOptimization<R> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("ModuleOpOptimization")
    }
}

impl<R: CubeRuntime> ModuleOpOptimization<R> {
    /// The optimization (also its restored state).
    pub fn new() -> Self {
        Self {
            _runtime: PhantomData,
        }
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
        counters::CUBE_MODULE_OP_ALONE.bump();
    }
}

impl<R: CubeRuntime> Default for ModuleOpOptimization<R> {
    fn default() -> Self {
        Self::new()
    }
}
