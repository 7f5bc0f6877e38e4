//! The optimization: the reshapes run ahead, then Burn's element-wise kernel.

use crate::counters;
use crate::cube::CubeAccRuntime;
use burn_cubecl::CubeRuntime;
use burn_cubecl_fusion::CubeFusionHandle;
use burn_cubecl_fusion::optim::elemwise::{ElemwiseOptimization, ElemwiseOptimizationState};
use burn_fusion::stream::{Context, OrderedExecution};

/// Runs the reshapes at `hoisted` (positions in the optimization) one by one as Burn would,
/// each a relabelling of a contiguous buffer (a copy otherwise), then Burn's element-wise
/// kernel over the other ops, which reads the reshapes' outputs as inputs. Results are Burn's
/// kernel's, bit for bit: a reduction over an axis of size 1 is an assignment in it.
pub struct ElementWiseViewsOptimization<R: CubeRuntime> {
    hoisted: Vec<usize>,
    unit_reductions: usize,
    kernel: ElemwiseOptimization<R>,
}

/// The serialisable state of an [`ElementWiseViewsOptimization`].
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct ElementWiseViewsState {
    hoisted: Vec<usize>,
    unit_reductions: usize,
    kernel: ElemwiseOptimizationState,
}

impl<R: CubeRuntime> core::fmt::Debug for ElementWiseViewsOptimization<R> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ElementWiseViewsOptimization")
            .field("hoisted", &self.hoisted)
            .field("unit_reductions", &self.unit_reductions)
            .field("kernel_ops", &self.kernel.num_ops_fused())
            .finish()
    }
}

impl<R: CubeRuntime> ElementWiseViewsOptimization<R> {
    pub(crate) fn new(
        hoisted: Vec<usize>,
        unit_reductions: usize,
        kernel: ElemwiseOptimization<R>,
    ) -> Self {
        Self {
            hoisted,
            unit_reductions,
            kernel,
        }
    }

    /// The ops it covers: the reshapes run ahead and those of the kernel.
    pub fn num_operations(&self) -> usize {
        self.hoisted.len() + self.kernel.num_ops_fused()
    }

    /// Runs the reshapes, then the kernel.
    pub fn execute(
        &self,
        context: &mut Context<CubeFusionHandle<R>>,
        execution: &OrderedExecution<CubeAccRuntime<R>>,
    ) {
        for &position in &self.hoisted {
            execution
                .operation_within_optimization(position)
                .execute(&mut context.handles);
        }
        self.kernel.execute(context);
        counters::CUBE_ELEMENTWISE_VIEWS.bump();
        counters::CUBE_ELEMENTWISE_RESHAPES_AHEAD.add(self.hoisted.len() as u64);
        counters::CUBE_ELEMENTWISE_UNIT_REDUCTIONS.add(self.unit_reductions as u64);
    }

    /// Its state, for Burn's cache of optimizations.
    pub fn to_state(&self) -> ElementWiseViewsState {
        ElementWiseViewsState {
            hoisted: self.hoisted.clone(),
            unit_reductions: self.unit_reductions,
            kernel: self.kernel.to_state(),
        }
    }

    /// The optimization from its state.
    pub fn from_state(device: &R::Device, state: ElementWiseViewsState) -> Self {
        Self::new(
            state.hoisted,
            state.unit_reductions,
            ElemwiseOptimization::from_state(device, state.kernel),
        )
    }
}
