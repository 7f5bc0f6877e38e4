//! The fusion runtime of `Fusion<CubeAcc<R>>`: Burn's CubeCL fusers and the optimizations
//! they build, beside burnacc's (reduction chains, `super::sum_chain`; module and custom ops
//! that lead a block, `super::lone_op`; element-wise kernels behind reshapes run ahead,
//! `super::elementwise_views`).

use super::elementwise_views::{
    ElementWiseViewsFuser, ElementWiseViewsOptimization, ElementWiseViewsState,
};
use super::lone_op::{LoneOpFuser, LoneOpKind, LoneOpOptimization};
use super::stock::{execute_stock, stock_from_state, stock_fusers};
use super::sum_chain::{SumChain, SumChainFuser, SumChainOptimization};
use burn_cubecl::CubeRuntime;
use burn_cubecl_fusion::CubeFusionHandle;
use burn_cubecl_fusion::optim::{CubeOptimization, CubeOptimizationState};
use burn_fusion::stream::{Context, OrderedExecution};
use burn_fusion::{FusionRuntime, NumOperations, OperationFuser, Optimization};
use core::marker::PhantomData;

/// Burn's fusion runtime for [`super::CubeAcc`]: the fusers Burn's stream asks for
/// optimizations on a CubeCL device.
pub struct CubeAccRuntime<R: CubeRuntime> {
    _runtime: PhantomData<R>,
}

impl<R: CubeRuntime> core::fmt::Debug for CubeAccRuntime<R> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("CubeAccRuntime")
    }
}

/// An optimization of `Fusion<CubeAcc<R>>`: a sequence of ops executed as one.
pub enum CubeAccOptimization<R: CubeRuntime> {
    /// One of Burn's own (element-wise, matmul, reduce, reduce-broadcasted).
    Stock(CubeOptimization<R>),
    /// A chain of `sum_dim` / `mean_dim` as one multi-axis reduction (`super::sum_chain`).
    SumChain(SumChainOptimization<R>),
    /// A module or custom op that leads a block, run alone (`super::lone_op`).
    LoneOp(LoneOpOptimization<R>),
    /// Burn's element-wise kernel behind reshapes run ahead (`super::elementwise_views`).
    ElementWiseViews(ElementWiseViewsOptimization<R>),
}

impl<R: CubeRuntime> core::fmt::Debug for CubeAccOptimization<R> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            CubeAccOptimization::Stock(o) => f.debug_tuple("Stock").field(o).finish(),
            CubeAccOptimization::SumChain(o) => o.fmt(f),
            CubeAccOptimization::LoneOp(o) => o.fmt(f),
            CubeAccOptimization::ElementWiseViews(o) => o.fmt(f),
        }
    }
}

/// The serialisable state of a [`CubeAccOptimization`] (Burn can cache optimizations).
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub enum CubeAccOptimizationState {
    /// One of Burn's own (boxed, as the chain: the unit variant is the common size).
    Stock(Box<CubeOptimizationState>),
    /// A reduction chain.
    SumChain(Box<SumChain>),
    /// A module or custom op run alone.
    LoneOp(LoneOpKind),
    /// An element-wise kernel behind reshapes run ahead.
    ElementWiseViews(Box<ElementWiseViewsState>),
}

impl<R: CubeRuntime> FusionRuntime for CubeAccRuntime<R> {
    type OptimizationState = CubeAccOptimizationState;
    type Optimization = CubeAccOptimization<R>;
    type FusionHandle = CubeFusionHandle<R>;
    type FusionDevice = R::CubeDevice;

    fn fusers(device: R::CubeDevice) -> Vec<Box<dyn OperationFuser<CubeAccOptimization<R>>>> {
        let mut fusers = stock_fusers::<R>(device.clone());
        // After Burn's: where both build the same kernel, Burn's wins the tie.
        fusers.push(Box::new(ElementWiseViewsFuser::<R>::new(device)));
        fusers.push(Box::new(SumChainFuser::<R>::new()));
        fusers.push(Box::new(LoneOpFuser::<R>::new()));
        fusers
    }
}

impl<R: CubeRuntime> NumOperations for CubeAccOptimization<R> {
    fn len(&self) -> usize {
        match self {
            CubeAccOptimization::Stock(o) => o.len(),
            CubeAccOptimization::SumChain(o) => o.chain().num_operations(),
            CubeAccOptimization::LoneOp(_) => 1,
            CubeAccOptimization::ElementWiseViews(o) => o.num_operations(),
        }
    }

    fn name(&self) -> &'static str {
        match self {
            CubeAccOptimization::Stock(o) => o.name(),
            CubeAccOptimization::SumChain(_) => "SumChain",
            CubeAccOptimization::LoneOp(_) => "LoneOp",
            CubeAccOptimization::ElementWiseViews(_) => "ElementWiseViews",
        }
    }
}

impl<R: CubeRuntime> Optimization<CubeAccRuntime<R>> for CubeAccOptimization<R> {
    fn execute(
        &mut self,
        context: &mut Context<CubeFusionHandle<R>>,
        execution: &OrderedExecution<CubeAccRuntime<R>>,
    ) {
        match self {
            CubeAccOptimization::Stock(o) => execute_stock(o, context, execution),
            CubeAccOptimization::SumChain(o) => o.execute(context, execution),
            CubeAccOptimization::LoneOp(o) => o.execute(context, execution),
            CubeAccOptimization::ElementWiseViews(o) => o.execute(context, execution),
        }
    }

    fn to_state(&self) -> CubeAccOptimizationState {
        match self {
            CubeAccOptimization::Stock(o) => {
                CubeAccOptimizationState::Stock(Box::new(o.to_opt_state()))
            }
            CubeAccOptimization::SumChain(o) => {
                CubeAccOptimizationState::SumChain(Box::new(o.chain().clone()))
            }
            CubeAccOptimization::LoneOp(o) => CubeAccOptimizationState::LoneOp(o.kind()),
            CubeAccOptimization::ElementWiseViews(o) => {
                CubeAccOptimizationState::ElementWiseViews(Box::new(o.to_state()))
            }
        }
    }

    fn from_state(device: &R::CubeDevice, state: CubeAccOptimizationState) -> Self {
        match state {
            CubeAccOptimizationState::Stock(s) => {
                CubeAccOptimization::Stock(stock_from_state::<R>(device, *s))
            }
            CubeAccOptimizationState::SumChain(chain) => {
                CubeAccOptimization::SumChain(SumChainOptimization::new(*chain))
            }
            CubeAccOptimizationState::LoneOp(kind) => {
                CubeAccOptimization::LoneOp(LoneOpOptimization::new(kind))
            }
            CubeAccOptimizationState::ElementWiseViews(state) => {
                CubeAccOptimization::ElementWiseViews(ElementWiseViewsOptimization::from_state(
                    device, *state,
                ))
            }
        }
    }
}
