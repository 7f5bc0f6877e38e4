//! `Acc<B>`: burnacc's Burn backend, a decorator over an inner backend `B`.
//!
//! Every op of Burn 0.21's `Backend` trait passes through `Acc<B>` (see [`forward`], generated
//! from the trait sources by `scripts/gen_forwarding.py`). The primitive tensor types are `B`'s
//! own, so with nothing enabled `Acc<B>` computes exactly what `B` computes, bit for bit; the
//! only cost per op is one counter increment ([`counters`]).
//!
//! `Acc` works on either side of autodiff. burnacc's `acc` stacks put it above
//! (`Acc<Autodiff<Fusion<CubeAcc<R>>>>` on GPUs and wgpu, `Acc<Autodiff<CpuFlex>>` on the
//! CPU), where it sees the ops a model calls and its autocast casts are differentiable ops;
//! docs/amp.md has the measurements behind that choice.

pub mod autocast;
mod convert;
pub mod counters;
#[rustfmt::skip] // generated: one `op!` line per op
pub mod forward;
pub mod fused;
mod macros;
mod overrides;
pub mod routes;
pub mod swin_window;
pub mod trace;

use burn::tensor::backend::{
    AutodiffBackend, Backend, BackendTypes, DTypeUsageSet, ExecutionError,
};
use burn::tensor::ops::{BoolTensor, FloatTensor, IntTensor, QuantizedTensor};
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

/// `Acc` above autodiff (`Acc<Autodiff<B>>`, the `acc` stacks): training works as with
/// `Autodiff<B>`, and the optimizer's ops run on `Acc<B>`, so they pass through `Acc` too.
/// Gradients and inner tensors are the inner backend's primitives, shared as for every op.
impl<A: AutodiffBackend> AutodiffBackend for Acc<A> {
    type InnerBackend = Acc<A::InnerBackend>;
    type Gradients = A::Gradients;

    fn backward(tensor: FloatTensor<Self>) -> Self::Gradients {
        A::backward(tensor)
    }

    fn grad(
        tensor: &FloatTensor<Self>,
        grads: &Self::Gradients,
    ) -> Option<FloatTensor<Self::InnerBackend>> {
        A::grad(tensor, grads)
    }

    fn grad_remove(
        tensor: &FloatTensor<Self>,
        grads: &mut Self::Gradients,
    ) -> Option<FloatTensor<Self::InnerBackend>> {
        A::grad_remove(tensor, grads)
    }

    fn grad_replace(
        tensor: &FloatTensor<Self>,
        grads: &mut Self::Gradients,
        grad: FloatTensor<Self::InnerBackend>,
    ) {
        A::grad_replace(tensor, grads, grad)
    }

    fn inner(tensor: FloatTensor<Self>) -> FloatTensor<Self::InnerBackend> {
        A::inner(tensor)
    }

    fn int_inner(tensor: IntTensor<Self>) -> IntTensor<Self::InnerBackend> {
        A::int_inner(tensor)
    }

    fn bool_inner(tensor: BoolTensor<Self>) -> BoolTensor<Self::InnerBackend> {
        A::bool_inner(tensor)
    }

    fn q_inner(tensor: QuantizedTensor<Self>) -> QuantizedTensor<Self::InnerBackend> {
        A::q_inner(tensor)
    }

    fn from_inner(tensor: FloatTensor<Self::InnerBackend>) -> FloatTensor<Self> {
        A::from_inner(tensor)
    }

    fn int_from_inner(tensor: IntTensor<Self::InnerBackend>) -> IntTensor<Self> {
        A::int_from_inner(tensor)
    }

    fn bool_from_inner(tensor: BoolTensor<Self::InnerBackend>) -> BoolTensor<Self> {
        A::bool_from_inner(tensor)
    }

    fn q_from_inner(tensor: QuantizedTensor<Self::InnerBackend>) -> QuantizedTensor<Self> {
        A::q_from_inner(tensor)
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
