//! The fuser: Burn's `ElementWiseFuser` fed a rewritten op stream.

use super::optimization::ElementWiseViewsOptimization;
use crate::cube::CubeAccOptimization;
use burn::backend::ir::{
    BaseOperationIr, NumericOperationIr, OperationIr, ShapeOpIr, TensorId, TensorStatus,
};
use burn_cubecl::CubeRuntime;
use burn_cubecl_fusion::optim::CubeOptimization;
use burn_cubecl_fusion::optim::elemwise::ElementWiseFuser;
use burn_fusion::{FuserProperties, FuserStatus, OperationFuser};
use std::collections::HashSet;

/// Burn's element-wise fuser behind a rewrite of the ops it closes on (`super`).
///
/// Its optimization covers the ops it accepted, in order: the reshapes it runs ahead
/// (`hoisted`, by position) and the rest, fused by Burn's fuser into one kernel. Where the
/// stream has none of those ops, it builds what Burn's own element-wise fuser builds with the
/// same score; Burn's, earlier in the list of fusers, wins such ties.
pub(crate) struct ElementWiseViewsFuser<R: CubeRuntime> {
    inner: ElementWiseFuser<R>,
    /// Positions of the reshapes run ahead of the kernel.
    hoisted: Vec<usize>,
    /// Reductions over an axis of size 1, given to `inner` as assignments.
    unit_reductions: usize,
    /// Tensors the ops given to `inner` wrote.
    written: HashSet<TensorId>,
    /// Tensors the ops given to `inner` read.
    read: HashSet<TensorId>,
    status: FuserStatus,
}

impl<R: CubeRuntime> ElementWiseViewsFuser<R> {
    pub(crate) fn new(device: R::Device) -> Self {
        Self {
            inner: ElementWiseFuser::new(device),
            hoisted: Vec::new(),
            unit_reductions: 0,
            written: HashSet::new(),
            read: HashSet::new(),
            status: FuserStatus::Open,
        }
    }

    /// Whether a `reshape` can run before the kernel: its input exists before the block (no op
    /// of the kernel writes it), and no op of the kernel before it reads the input for the last
    /// time it is read here (the reshape would free the buffer the kernel still reads).
    fn can_run_ahead(&self, reshape: &ShapeOpIr) -> bool {
        let input = &reshape.input;
        !self.written.contains(&input.id)
            && (input.status == TensorStatus::ReadOnly || !self.read.contains(&input.id))
    }

    /// Gives `operation` to `inner`; false when `inner` rejects it (and closes).
    fn give(&mut self, operation: &OperationIr) -> bool {
        let before = self.inner.len();
        self.inner.fuse(operation);
        if self.inner.len() == before {
            return false;
        }
        for tensor in operation.inputs() {
            self.read.insert(tensor.id);
        }
        for tensor in operation.outputs() {
            self.written.insert(tensor.id);
        }
        true
    }

    /// Takes `operation` if it can, else says no.
    fn accept(&mut self, operation: &OperationIr) -> bool {
        if let Some(identity) = unit_reduction_as_assignment(operation) {
            if !self.give(&identity) {
                return false;
            }
            self.unit_reductions += 1;
            return true;
        }
        let OperationIr::BaseFloat(BaseOperationIr::Reshape(reshape)) = operation else {
            return self.give(operation);
        };
        // Burn's fuser closes on the reshapes it rejects: keep it as it was, to restore.
        let before = self.inner.clone();
        if self.give(operation) {
            return true;
        }
        self.inner = before;
        if !self.can_run_ahead(reshape) {
            return false;
        }
        self.hoisted.push(self.len());
        true
    }
}

/// A float `sum_dim` / `mean_dim` over an axis of size 1 (in Burn's relative shapes, size 1
/// is always shape id 0) as the `reshape` to the same shape that Burn's fuser takes as an
/// assignment.
fn unit_reduction_as_assignment(operation: &OperationIr) -> Option<OperationIr> {
    let OperationIr::NumericFloat(dtype, op) = operation else {
        return None;
    };
    let desc = match op {
        NumericOperationIr::SumDim(desc) | NumericOperationIr::MeanDim(desc) => desc,
        _ => return None,
    };
    let unit_axis = desc.input.shape.as_slice().get(desc.axis) == Some(&0);
    if !dtype.is_float() || !unit_axis || desc.input.shape != desc.out.shape {
        return None;
    }
    Some(OperationIr::BaseFloat(BaseOperationIr::Reshape(
        ShapeOpIr {
            input: desc.input.clone(),
            out: desc.out.clone(),
        },
    )))
}

impl<R: CubeRuntime> Clone for ElementWiseViewsFuser<R> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
            hoisted: self.hoisted.clone(),
            unit_reductions: self.unit_reductions,
            written: self.written.clone(),
            read: self.read.clone(),
            status: self.status,
        }
    }
}

impl<R: CubeRuntime> OperationFuser<CubeAccOptimization<R>> for ElementWiseViewsFuser<R> {
    fn fuse(&mut self, operation: &OperationIr) {
        if self.status == FuserStatus::Closed {
            return;
        }
        if !self.accept(operation) {
            self.status = FuserStatus::Closed;
        }
    }

    fn finish(&mut self) -> CubeAccOptimization<R> {
        let CubeOptimization::ElementWise(kernel) = self.inner.finish() else {
            unreachable!("Burn's element-wise fuser builds element-wise optimizations")
        };
        CubeAccOptimization::ElementWiseViews(ElementWiseViewsOptimization::new(
            self.hoisted.clone(),
            self.unit_reductions,
            kernel,
        ))
    }

    fn reset(&mut self) {
        self.inner.reset();
        self.hoisted.clear();
        self.unit_reductions = 0;
        self.written.clear();
        self.read.clear();
        self.status = FuserStatus::Open;
    }

    fn status(&self) -> FuserStatus {
        self.status
    }

    fn properties(&self) -> FuserProperties {
        self.inner.properties()
    }

    /// The ops accepted: those run ahead and those of the kernel (Burn's fuser counts one
    /// per op it fuses).
    fn len(&self) -> usize {
        self.hoisted.len() + self.inner.len()
    }

    fn clone_dyn(&self) -> Box<dyn OperationFuser<CubeAccOptimization<R>>> {
        Box::new(self.clone())
    }
}
