//! The fusion runtime of `Fusion<CpuFlex>`: burnacc's fusers and the optimizations they build.

use burn::backend::flex::FlexDevice;
use burn::backend::ir::HandleKind;
use burn_fusion::stream::{Context, OrderedExecution};
use burn_fusion::{FusionRuntime, NumOperations, OperationFuser, Optimization};

use super::CpuFlex;

/// Burn's fusion runtime for [`CpuFlex`]: the fusers Burn's stream asks for optimizations.
#[derive(Debug)]
pub struct CpuFusionRuntime;

/// An optimization of `Fusion<CpuFlex>`: a sequence of ops executed as one.
#[derive(Debug)]
pub enum CpuOptimization {}

/// The serialisable state of a [`CpuOptimization`] (Burn can cache optimizations).
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub enum CpuOptimizationState {}

impl FusionRuntime for CpuFusionRuntime {
    type OptimizationState = CpuOptimizationState;
    type Optimization = CpuOptimization;
    type FusionHandle = HandleKind<CpuFlex>;
    type FusionDevice = FlexDevice;

    fn fusers(_device: FlexDevice) -> Vec<Box<dyn OperationFuser<CpuOptimization>>> {
        Vec::new()
    }
}

impl NumOperations for CpuOptimization {
    fn len(&self) -> usize {
        match *self {}
    }

    fn name(&self) -> &'static str {
        match *self {}
    }
}

impl Optimization<CpuFusionRuntime> for CpuOptimization {
    fn execute(
        &mut self,
        _context: &mut Context<HandleKind<CpuFlex>>,
        _execution: &OrderedExecution<CpuFusionRuntime>,
    ) {
        match *self {}
    }

    fn to_state(&self) -> CpuOptimizationState {
        match *self {}
    }

    fn from_state(_device: &FlexDevice, state: CpuOptimizationState) -> Self {
        match state {}
    }
}
