//! [`CubeAcc`]: CubeCL's backend under a type of burnacc's own, so that `Fusion<CubeAcc<R>>`
//! runs burnacc's fusion runtime on wgpu and CUDA ([`CubeAccRuntime`]: Burn's own CubeCL
//! fusers, unchanged, beside burnacc's: `sum_chain`, chains of reductions as one kernel;
//! `lone_op`, a convolution, pooling or burnacc kernel that leads a block run alone so that the
//! ops behind it can fuse; `elementwise_views`, Burn's element-wise fuser reading through
//! reshapes it closes on and reductions over axes of size 1).

mod elementwise_views;
#[rustfmt::skip] // generated: one forwarding method per op
mod forward;
mod ir;
mod kernels;
mod lone_op;
mod runtime;
mod stock;
mod sum_chain;

pub use elementwise_views::{ElementWiseViewsOptimization, ElementWiseViewsState};
pub use lone_op::{LoneOpKind, LoneOpOptimization};
pub use runtime::{CubeAccOptimization, CubeAccOptimizationState, CubeAccRuntime};
pub use sum_chain::{SumChain, SumChainOptimization};

use burn::tensor::backend::{Backend, BackendTypes, DTypeUsageSet, ExecutionError};
use burn::tensor::{DType, TensorData};
use burn_cubecl::tensor::CubeTensor;
use burn_cubecl::{CubeBackend, CubeRuntime};
use core::marker::PhantomData;

/// The backend [`CubeAcc`] forwards every op to: CubeCL with f32 floats, i32 ints and u32
/// bools, as Burn's `Wgpu` and `Cuda` backends.
pub type CubeInner<R> = CubeBackend<R, f32, i32, u32>;

/// burnacc's CubeCL backend: [`CubeInner`]'s tensors (`CubeTensor<R>`) and every one of its
/// ops, unchanged; a type of burnacc's own so that Burn's fusion traits can give
/// `Fusion<CubeAcc<R>>` burnacc's fusion runtime (they cannot be implemented again for
/// Burn's `CubeBackend`). Dtypes: whatever `CubeBackend` stores.
#[derive(Debug)]
pub struct CubeAcc<R: CubeRuntime> {
    _runtime: PhantomData<R>,
}

impl<R: CubeRuntime> Clone for CubeAcc<R> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<R: CubeRuntime> Copy for CubeAcc<R> {}

impl<R: CubeRuntime> Default for CubeAcc<R> {
    fn default() -> Self {
        Self {
            _runtime: PhantomData,
        }
    }
}

impl<R: CubeRuntime> BackendTypes for CubeAcc<R> {
    type Device = R::Device;
    type FloatTensorPrimitive = CubeTensor<R>;
    type FloatElem = f32;
    type IntTensorPrimitive = CubeTensor<R>;
    type IntElem = i32;
    type BoolTensorPrimitive = CubeTensor<R>;
    type BoolElem = u32;
    type QuantizedTensorPrimitive = CubeTensor<R>;
}

impl<R: CubeRuntime> Backend for CubeAcc<R> {
    fn name(device: &Self::Device) -> String {
        format!("cube-acc<{}>", CubeInner::<R>::name(device))
    }

    fn seed(device: &Self::Device, seed: u64) {
        CubeInner::<R>::seed(device, seed)
    }

    fn sync(device: &Self::Device) -> Result<(), ExecutionError> {
        CubeInner::<R>::sync(device)
    }

    fn ad_enabled(device: &Self::Device) -> bool {
        CubeInner::<R>::ad_enabled(device)
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
        CubeInner::<R>::memory_persistent_allocations(device, input, func)
    }

    fn memory_cleanup(device: &Self::Device) {
        CubeInner::<R>::memory_cleanup(device)
    }

    fn staging<'a, Iter>(data: Iter, device: &Self::Device)
    where
        Iter: Iterator<Item = &'a mut TensorData>,
    {
        CubeInner::<R>::staging(data, device)
    }

    fn supports_dtype(device: &Self::Device, dtype: DType) -> bool {
        CubeInner::<R>::supports_dtype(device, dtype)
    }

    fn dtype_usage(device: &Self::Device, dtype: DType) -> DTypeUsageSet {
        CubeInner::<R>::dtype_usage(device, dtype)
    }

    fn device_count(type_id: u16) -> usize {
        CubeInner::<R>::device_count(type_id)
    }
}
