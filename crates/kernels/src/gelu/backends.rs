//! [`GeluKernel`] for Burn's backends: the CubeCL kernels for [`CubeBackend`], the reference
//! (the trait's provided methods) for the CPU backends.

use burn::backend::ndarray::{
    FloatNdArrayElement, IntNdArrayElement, NdArrayTensor, QuantElement, SharedArray,
};
use burn::backend::{Flex, NdArray};
use burn_cubecl::tensor::CubeTensor;
use burn_cubecl::{BoolElement, CubeBackend, CubeRuntime, FloatElement, IntElement};

use super::GeluKernel;
use super::launch::{
    bias_gelu_backward_cube, bias_gelu_forward_cube, quick_gelu_backward_cube,
    quick_gelu_forward_cube,
};

impl<R, F, I, BT> GeluKernel for CubeBackend<R, F, I, BT>
where
    R: CubeRuntime,
    F: FloatElement,
    I: IntElement,
    BT: BoolElement,
{
    fn fused_quick_gelu(x: CubeTensor<R>) -> CubeTensor<R> {
        quick_gelu_forward_cube(x)
    }

    fn fused_quick_gelu_backward(x: CubeTensor<R>, grad_out: CubeTensor<R>) -> CubeTensor<R> {
        quick_gelu_backward_cube(x, grad_out)
    }

    fn fused_bias_gelu(x: CubeTensor<R>, bias: Option<CubeTensor<R>>) -> CubeTensor<R> {
        bias_gelu_forward_cube(x, bias)
    }

    fn fused_bias_gelu_backward(
        x: CubeTensor<R>,
        bias: Option<CubeTensor<R>>,
        grad_out: CubeTensor<R>,
    ) -> (CubeTensor<R>, Option<CubeTensor<R>>) {
        bias_gelu_backward_cube(x, bias, grad_out)
    }
}

/// Reference path: the workspace's CPU inner backend.
impl GeluKernel for Flex {}

/// Reference path: NdArray (the f64 reference backend of the tests).
impl<E: FloatNdArrayElement, I: IntNdArrayElement, Q: QuantElement> GeluKernel for NdArray<E, I, Q>
where
    NdArrayTensor: From<SharedArray<E>>,
    NdArrayTensor: From<SharedArray<I>>,
{
}
