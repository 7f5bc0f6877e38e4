//! `Acc<B>`: burnacc's Burn backend, a decorator over an inner backend `B`.
//!
//! Every op of Burn 0.21's `Backend` trait passes through `Acc<B>` (see [`forward`], generated
//! from the trait sources by `scripts/gen_forwarding.py`). The primitive tensor types are `B`'s
//! own, so with nothing enabled `Acc<B>` computes exactly what `B` computes, bit for bit; the
//! only cost per op is one counter increment ([`counters`]).
//!
//! Stacks (DESIGN.md §2): `Autodiff<Acc<Fusion<CubeBackend<R>>>>` on GPUs and wgpu,
//! `Autodiff<Acc<Flex>>` on the CPU.

mod convert;
pub mod counters;
#[rustfmt::skip] // generated: one `op!` line per op
pub mod forward;
mod macros;

use burn::tensor::backend::{Backend, BackendTypes, DTypeUsageSet, ExecutionError};
use burn::tensor::{DType, TensorData};
use core::marker::PhantomData;

/// The burnacc backend: forwards every op to `B`, counting each one.
///
/// `Acc<B>` shares `B`'s device and primitive types, so tensors move between `Tensor<B, D>`
/// and `Tensor<Acc<B>, D>` without a copy (see [`Acc::from_inner`], [`Acc::into_inner`]).
#[derive(Clone, Default, Debug)]
pub struct Acc<B> {
    inner: PhantomData<B>,
}

impl<B: Backend> BackendTypes for Acc<B> {
    type Device = B::Device;
    type FloatTensorPrimitive = B::FloatTensorPrimitive;
    type FloatElem = B::FloatElem;
    type IntTensorPrimitive = B::IntTensorPrimitive;
    type IntElem = B::IntElem;
    type BoolTensorPrimitive = B::BoolTensorPrimitive;
    type BoolElem = B::BoolElem;
    type QuantizedTensorPrimitive = B::QuantizedTensorPrimitive;
}

impl<B: Backend> Backend for Acc<B> {
    fn ad_enabled(device: &Self::Device) -> bool {
        B::ad_enabled(device)
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
        B::memory_persistent_allocations(device, input, func)
    }

    fn memory_cleanup(device: &Self::Device) {
        B::memory_cleanup(device)
    }

    fn name(device: &Self::Device) -> String {
        format!("acc<{}>", B::name(device))
    }

    fn seed(device: &Self::Device, seed: u64) {
        B::seed(device, seed)
    }

    fn sync(device: &Self::Device) -> Result<(), ExecutionError> {
        B::sync(device)
    }

    fn staging<'a, Iter>(data: Iter, device: &Self::Device)
    where
        Iter: Iterator<Item = &'a mut TensorData>,
    {
        B::staging(data, device)
    }

    fn supports_dtype(device: &Self::Device, dtype: DType) -> bool {
        B::supports_dtype(device, dtype)
    }

    fn dtype_usage(device: &Self::Device, dtype: DType) -> DTypeUsageSet {
        B::dtype_usage(device, dtype)
    }

    fn device_count(type_id: u16) -> usize {
        B::device_count(type_id)
    }
}

impl<B: Backend> Acc<B> {
    /// Views a tensor of the inner backend as an `Acc` tensor (no copy: same primitive).
    pub fn from_inner<const D: usize>(
        tensor: burn::tensor::Tensor<B, D>,
    ) -> burn::tensor::Tensor<Self, D> {
        let primitive = convert::tp_out(tensor.into_primitive());
        burn::tensor::Tensor::from_primitive(primitive)
    }

    /// Views an `Acc` tensor as a tensor of the inner backend (no copy: same primitive).
    pub fn into_inner<const D: usize>(
        tensor: burn::tensor::Tensor<Self, D>,
    ) -> burn::tensor::Tensor<B, D> {
        let primitive = convert::tp_in(tensor.into_primitive());
        burn::tensor::Tensor::from_primitive(primitive)
    }
}
