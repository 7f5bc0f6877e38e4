//! Burn's own CubeCL fusers in burnacc's runtime: element-wise chains, matrix products and
//! reductions with their fused prologues and epilogues, built and run exactly as in
//! `Fusion<CubeBackend<R>>` (the list of burn-cubecl 0.21's `FusionCubeRuntime::fusers`).

use super::runtime::{CubeAccOptimization, CubeAccRuntime};
use crate::counters;
use burn::backend::ir::OperationIr;
use burn_cubecl::CubeRuntime;
use burn_cubecl::fusion::FusionCubeRuntime;
use burn_cubecl_fusion::optim::elemwise::ElementWiseFuser;
use burn_cubecl_fusion::optim::matmul::MatmulFuser;
use burn_cubecl_fusion::optim::reduce::{ReduceFuser, ReduceSettings};
use burn_cubecl_fusion::optim::reduce_broadcasted::ReduceBroadcastedFuser;
use burn_cubecl_fusion::optim::{CubeOptimization, CubeOptimizationState};
use burn_cubecl_fusion::{CubeFusionHandle, FallbackOperation};
use burn_fusion::stream::{Context, OrderedExecution};
use burn_fusion::{FuserProperties, FuserStatus, OperationFuser, Optimization, UnfusedOp};

/// Burn's CubeCL fusers, in Burn's order, each wrapped to build a [`CubeAccOptimization`].
pub(crate) fn stock_fusers<R: CubeRuntime>(
    device: R::Device,
) -> Vec<Box<dyn OperationFuser<CubeAccOptimization<R>>>> {
    let fusers: [Box<dyn OperationFuser<CubeOptimization<R>>>; 4] = [
        Box::new(ElementWiseFuser::new(device.clone())),
        Box::new(MatmulFuser::new(device.clone())),
        Box::new(ReduceFuser::new(device.clone(), ReduceSettings::Always)),
        Box::new(ReduceBroadcastedFuser::new(device)),
    ];
    fusers
        .into_iter()
        .map(|fuser| Box::new(Stock(fuser)) as Box<dyn OperationFuser<CubeAccOptimization<R>>>)
        .collect()
}

/// One of Burn's fusers, its optimization labelled [`CubeAccOptimization::Stock`].
struct Stock<R: CubeRuntime>(Box<dyn OperationFuser<CubeOptimization<R>>>);

impl<R: CubeRuntime> OperationFuser<CubeAccOptimization<R>> for Stock<R> {
    fn fuse(&mut self, operation: &OperationIr) {
        self.0.fuse(operation)
    }

    fn finish(&mut self) -> CubeAccOptimization<R> {
        CubeAccOptimization::Stock(self.0.finish())
    }

    fn reset(&mut self) {
        self.0.reset()
    }

    fn status(&self) -> FuserStatus {
        self.0.status()
    }

    fn properties(&self) -> FuserProperties {
        self.0.properties()
    }

    fn len(&self) -> usize {
        self.0.len()
    }

    fn clone_dyn(&self) -> Box<dyn OperationFuser<CubeAccOptimization<R>>> {
        Box::new(Stock(self.0.clone_dyn()))
    }
}

/// Runs one of Burn's optimizations as burn-cubecl does; the optimizations that can fall back
/// to the unfused ops (matmul and reductions, when autotuning picks that) take them from
/// burnacc's runtime's execution.
pub(crate) fn execute_stock<R: CubeRuntime>(
    optimization: &mut CubeOptimization<R>,
    context: &mut Context<CubeFusionHandle<R>>,
    execution: &OrderedExecution<CubeAccRuntime<R>>,
) {
    let fallback = |index| {
        let operation = execution.operation_within_optimization(index);
        Box::new(Unfused(operation)) as Box<dyn FallbackOperation<R>>
    };
    match optimization {
        CubeOptimization::ElementWise(op) => {
            op.execute(context);
            counters::CUBE_STOCK_ELEMENTWISE.bump();
        }
        CubeOptimization::Matmul(op) => op.execute(context, fallback),
        CubeOptimization::Reduce(op) => op.execute(context, fallback),
        CubeOptimization::ReduceBroadcasted(op) => op.execute(context, fallback),
    }
}

/// One of Burn's optimizations from its state, as burn-cubecl restores it.
pub(crate) fn stock_from_state<R: CubeRuntime>(
    device: &R::Device,
    state: CubeOptimizationState,
) -> CubeOptimization<R> {
    <CubeOptimization<R> as Optimization<FusionCubeRuntime<R>>>::from_state(device, state)
}

/// An op of the fused sequence, run on its own when an optimization falls back.
struct Unfused<R: CubeRuntime>(UnfusedOp<CubeAccRuntime<R>>);

impl<R: CubeRuntime> FallbackOperation<R> for Unfused<R> {
    fn run(&self, context: &mut Context<CubeFusionHandle<R>>) {
        self.0.execute(&mut context.handles);
    }
}
