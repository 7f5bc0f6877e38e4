//! Recording a fused call into Burn's fusion backend `Fusion<B>` (what `burn::backend::Wgpu`
//! is) as one custom operation that, when the fusion stream executes, runs the inner backend's
//! fused method on the materialized inputs.
//!
//! Fusion cannot see inside a custom operation, so it is a barrier: the element-wise ops
//! recorded before it are flushed as their own fused kernels and those after it start a new
//! fusion. Like every fusion op it runs lazily, when a result is read or the stream is flushed.
//!
//! Output shapes and dtypes must be declared when the operation is recorded, before the inner
//! backend runs. The inner results are checked against these declarations when it executes,
//! since a mismatch would silently corrupt what fusion believes of the tensors. Scalar
//! parameters (`eps`, `p`, which optional inputs are present) travel in the recorded call, not
//! in its IR, which only lists tensors.

use core::fmt::Debug;
use core::marker::PhantomData;

use burn::backend::ir::{CustomOpIr, HandleContainer, OperationIr, TensorIr};
use burn::tensor::ops::{FloatTensor, IntTensor};
use burn::tensor::{DType, Shape, TensorMetadata};
use burn_fusion::stream::{Operation, OperationStreams};
use burn_fusion::{Fusion, FusionBackend, FusionRuntime, FusionTensor};

/// What a recorded operation runs on the inner backend `B`: reads its inputs in the order they
/// were recorded and returns its outputs in the order they were declared.
pub(crate) trait InnerCall<B: FusionBackend>: Debug + Send + Sync + 'static {
    /// Runs the inner backend's fused method.
    fn run(&self, inputs: &mut RecordedInputs<'_, B>) -> Vec<FloatTensor<B>>;
}

/// The materialized inputs of a recorded operation, handed out in recorded order.
pub(crate) struct RecordedInputs<'a, B: FusionBackend> {
    handles: &'a mut HandleContainer<<B::FusionRuntime as FusionRuntime>::FusionHandle>,
    irs: core::slice::Iter<'a, TensorIr>,
}

impl<B: FusionBackend> RecordedInputs<'_, B> {
    /// How many inputs remain.
    pub(crate) fn remaining(&self) -> usize {
        self.irs.len()
    }

    /// The next input, as a float tensor of the inner backend.
    pub(crate) fn float(&mut self) -> FloatTensor<B> {
        let ir = self
            .irs
            .next()
            .expect("the call reads the inputs it recorded");
        self.handles.get_float_tensor::<B>(ir)
    }

    /// The next `n` inputs, as float tensors.
    pub(crate) fn floats(&mut self, n: usize) -> Vec<FloatTensor<B>> {
        (0..n).map(|_| self.float()).collect()
    }

    /// The next input, as an int tensor of the inner backend.
    pub(crate) fn int(&mut self) -> IntTensor<B> {
        let ir = self
            .irs
            .next()
            .expect("the call reads the inputs it recorded");
        self.handles.get_int_tensor::<B>(ir)
    }
}

/// One recorded call on the inner backend `B`.
#[derive(Debug)]
struct CustomOp<B, C> {
    desc: CustomOpIr,
    call: C,
    _backend: PhantomData<B>,
}

impl<B: FusionBackend, C: InnerCall<B>> Operation<B::FusionRuntime> for CustomOp<B, C> {
    fn execute(
        &self,
        handles: &mut HandleContainer<<B::FusionRuntime as FusionRuntime>::FusionHandle>,
    ) {
        let outputs = self.call.run(&mut RecordedInputs {
            handles: &mut *handles,
            irs: self.desc.inputs.iter(),
        });
        assert_eq!(
            outputs.len(),
            self.desc.outputs.len(),
            "{}: output count",
            self.desc.id
        );
        for (ir, tensor) in self.desc.outputs.iter().zip(outputs) {
            assert!(
                tensor.dtype() == ir.dtype && tensor.shape() == ir.shape,
                "{}: the inner backend returned {:?} {:?} where {:?} {:?} was declared",
                self.desc.id,
                tensor.dtype(),
                tensor.shape(),
                ir.dtype,
                ir.shape,
            );
            handles.register_float_tensor::<B>(&ir.id, tensor);
        }
    }
}

/// Records `call` under `id` with `inputs` (in the order `call` reads them; float and int
/// primitives are the same type under fusion) and outputs of the given shapes and dtypes, and
/// returns the (lazy) output tensors. No inputs record nothing and return no outputs.
pub(crate) fn record<B: FusionBackend, C: InnerCall<B>>(
    id: &'static str,
    call: C,
    inputs: Vec<FloatTensor<Fusion<B>>>,
    outputs: Vec<(Shape, DType)>,
) -> Vec<FloatTensor<Fusion<B>>> {
    let Some(head) = inputs.first() else {
        return Vec::new();
    };
    // All inputs live on one device, hence one fusion client.
    let client = head.client.clone();
    // Registers each input's stream, so that the operation waits for whatever produces them.
    let streams = OperationStreams::with_inputs(&inputs);
    let inputs: Vec<TensorIr> = inputs.into_iter().map(|t| t.into_ir()).collect();
    let outputs: Vec<TensorIr> = outputs
        .into_iter()
        .map(|(shape, dtype)| TensorIr::uninit(client.create_empty_handle(), shape, dtype))
        .collect();
    let desc = CustomOpIr::new(id, &inputs, &outputs);
    let op = CustomOp::<B, C> {
        desc: desc.clone(),
        call,
        _backend: PhantomData,
    };
    client.register(streams, OperationIr::Custom(desc), op)
}

/// The outputs of a recorded operation as an array of the `N` that were declared.
pub(crate) fn exactly<T, const N: usize>(outputs: Vec<T>) -> [T; N] {
    let count = outputs.len();
    outputs
        .try_into()
        .unwrap_or_else(|_| panic!("{N} outputs were declared, {count} returned"))
}

/// The shape and dtype of `t`, to declare an output like it.
pub(crate) fn like<R: FusionRuntime>(t: &FusionTensor<R>) -> (Shape, DType) {
    (t.shape.clone(), t.dtype)
}
