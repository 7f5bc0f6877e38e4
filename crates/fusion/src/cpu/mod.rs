//! [`CpuFlex`]: Flex's primitives and ops, burnacc's overrides, Burn's fusion IR.

pub mod elementwise;
#[rustfmt::skip] // generated: one forwarding method per op
mod forward;
pub mod host_memory;
mod ir;
mod kernels;
pub mod overrides;
mod runtime;

pub use runtime::{CpuFusionRuntime, CpuOptimization};

use burn::backend::Flex;
use burn::backend::flex::{FlexDevice, FlexQTensor, FlexTensor};
use burn::tensor::backend::{Backend, BackendTypes, DTypeUsageSet, ExecutionError};
use burn::tensor::{DType, TensorData};

/// burnacc's CPU backend: Flex's tensors and ops, with burnacc's kernels where they are faster
/// (`overrides`), and the IR handles Burn's fusion needs (`Fusion<CpuFlex>`).
///
/// A local type rather than Flex itself: Burn's fusion traits cannot be implemented for a
/// foreign type here. With none of the overrides taking an input (dtypes other than f32,
/// contiguous inputs of one shape), it computes exactly what Flex computes.
#[derive(Clone, Copy, Debug, Default)]
pub struct CpuFlex;

impl BackendTypes for CpuFlex {
    type Device = FlexDevice;
    type FloatTensorPrimitive = FlexTensor;
    type FloatElem = f32;
    type IntTensorPrimitive = FlexTensor;
    type IntElem = i32;
    type BoolTensorPrimitive = FlexTensor;
    type BoolElem = bool;
    type QuantizedTensorPrimitive = FlexQTensor;
}

impl Backend for CpuFlex {
    fn name(device: &Self::Device) -> String {
        format!("cpu-flex<{}>", Flex::name(device))
    }

    fn seed(device: &Self::Device, seed: u64) {
        Flex::seed(device, seed)
    }

    fn sync(device: &Self::Device) -> Result<(), ExecutionError> {
        Flex::sync(device)
    }

    fn ad_enabled(device: &Self::Device) -> bool {
        Flex::ad_enabled(device)
    }

    fn memory_persistent_allocations<
        Output: Send,
        Input: Send,
        Func: Fn(Input) -> Output + Send,
    >(
        device: &Self::Device,
        input: Input,
        func: Func,
    ) -> Output {
        Flex::memory_persistent_allocations(device, input, func)
    }

    fn memory_cleanup(device: &Self::Device) {
        Flex::memory_cleanup(device)
    }

    fn staging<'a, Iter>(data: Iter, device: &Self::Device)
    where
        Iter: Iterator<Item = &'a mut TensorData>,
    {
        Flex::staging(data, device)
    }

    fn supports_dtype(device: &Self::Device, dtype: DType) -> bool {
        Flex::supports_dtype(device, dtype)
    }

    fn dtype_usage(device: &Self::Device, dtype: DType) -> DTypeUsageSet {
        Flex::dtype_usage(device, dtype)
    }

    fn device_count(type_id: u16) -> usize {
        Flex::device_count(type_id)
    }
}
