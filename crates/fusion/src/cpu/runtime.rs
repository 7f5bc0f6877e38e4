//! The fusion runtime of `Fusion<CpuFlex>`: burnacc's fusers and the optimizations they build.

use burn::backend::flex::FlexDevice;
use burn::backend::ir::HandleKind;
use burn_fusion::stream::{Context, OrderedExecution};
use burn_fusion::{FusionRuntime, NumOperations, OperationFuser, Optimization};

use super::CpuFlex;
use super::elementwise::{ElementwiseFuser, ElementwiseOptimization, ElementwiseProgram};

/// Burn's fusion runtime for [`CpuFlex`]: the fusers Burn's stream asks for optimizations.
#[derive(Debug)]
pub struct CpuFusionRuntime;

/// An optimization of `Fusion<CpuFlex>`: a sequence of ops executed as one.
#[derive(Debug)]
pub enum CpuOptimization {
    /// A chain of element-wise ops as one pass.
    Elementwise(ElementwiseOptimization),
}

/// The serialisable state of a [`CpuOptimization`] (Burn can cache optimizations).
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub enum CpuOptimizationState {
    /// An element-wise chain's program.
    Elementwise(ElementwiseProgram),
}

impl FusionRuntime for CpuFusionRuntime {
    type OptimizationState = CpuOptimizationState;
    type Optimization = CpuOptimization;
    type FusionHandle = HandleKind<CpuFlex>;
    type FusionDevice = FlexDevice;

    fn fusers(_device: FlexDevice) -> Vec<Box<dyn OperationFuser<CpuOptimization>>> {
        vec![Box::new(ElementwiseFuser::default())]
    }
}

impl NumOperations for CpuOptimization {
    fn len(&self) -> usize {
        match self {
            CpuOptimization::Elementwise(o) => o.program().num_ops,
        }
    }

    fn name(&self) -> &'static str {
        match self {
            CpuOptimization::Elementwise(_) => "cpu_elementwise",
        }
    }
}

impl Optimization<CpuFusionRuntime> for CpuOptimization {
    fn execute(
        &mut self,
        context: &mut Context<HandleKind<CpuFlex>>,
        _execution: &OrderedExecution<CpuFusionRuntime>,
    ) {
        match self {
            CpuOptimization::Elementwise(o) => o.execute(context),
        }
    }

    fn to_state(&self) -> CpuOptimizationState {
        match self {
            CpuOptimization::Elementwise(o) => {
                CpuOptimizationState::Elementwise(o.program().clone())
            }
        }
    }

    fn from_state(_device: &FlexDevice, state: CpuOptimizationState) -> Self {
        match state {
            CpuOptimizationState::Elementwise(p) => {
                CpuOptimization::Elementwise(ElementwiseOptimization::new(p))
            }
        }
    }
}
