//! Burn's fusion IR for `CubeAcc<R>`: tensor handles (`BackendIr`, as `CubeBackend`'s) and
//! the fusion backend, whose runtime is burnacc's.

use super::{CubeAcc, CubeAccRuntime, CubeInner};
use burn::backend::ir::{BackendIr, TensorHandle};
use burn::tensor::DType;
use burn::tensor::ops::FloatTensor;
use burn_cubecl::CubeRuntime;
use burn_cubecl::tensor::CubeTensor;
use burn_cubecl_fusion::CubeFusionHandle;
use burn_fusion::FusionBackend;

impl<R: CubeRuntime> BackendIr for CubeAcc<R> {
    type Handle = CubeFusionHandle<R>;

    fn float_tensor(handle: TensorHandle<Self::Handle>) -> CubeTensor<R> {
        CubeInner::<R>::float_tensor(handle)
    }

    fn int_tensor(handle: TensorHandle<Self::Handle>) -> CubeTensor<R> {
        CubeInner::<R>::int_tensor(handle)
    }

    fn bool_tensor(handle: TensorHandle<Self::Handle>) -> CubeTensor<R> {
        CubeInner::<R>::bool_tensor(handle)
    }

    fn quantized_tensor(handle: TensorHandle<Self::Handle>) -> CubeTensor<R> {
        CubeInner::<R>::quantized_tensor(handle)
    }

    fn float_tensor_handle(tensor: CubeTensor<R>) -> Self::Handle {
        CubeInner::<R>::float_tensor_handle(tensor)
    }

    fn int_tensor_handle(tensor: CubeTensor<R>) -> Self::Handle {
        CubeInner::<R>::int_tensor_handle(tensor)
    }

    fn bool_tensor_handle(tensor: CubeTensor<R>) -> Self::Handle {
        CubeInner::<R>::bool_tensor_handle(tensor)
    }

    fn quantized_tensor_handle(tensor: CubeTensor<R>) -> Self::Handle {
        CubeInner::<R>::quantized_tensor_handle(tensor)
    }
}

impl<R: CubeRuntime> FusionBackend for CubeAcc<R> {
    type FusionRuntime = CubeAccRuntime<R>;
    type FullPrecisionBackend = CubeAcc<R>;

    fn cast_float(tensor: FloatTensor<Self>, dtype: DType) -> Self::Handle {
        CubeInner::<R>::cast_float(tensor, dtype)
    }
}
