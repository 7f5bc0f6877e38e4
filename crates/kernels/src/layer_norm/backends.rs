//! [`LayerNormKernel`] for Burn's backends: the CubeCL kernels for [`CubeBackend`], the
//! reference (the trait's provided methods) for the CPU backends.

use burn::backend::ndarray::{
    FloatNdArrayElement, IntNdArrayElement, NdArrayTensor, QuantElement, SharedArray,
};
use burn::backend::{Flex, NdArray};
use burn_cubecl::tensor::CubeTensor;
use burn_cubecl::{BoolElement, CubeBackend, CubeRuntime, FloatElement, IntElement};

use super::LayerNormKernel;
use super::launch::{layer_norm_backward_cube, layer_norm_forward_cube};

impl<R, F, I, BT> LayerNormKernel for CubeBackend<R, F, I, BT>
where
    R: CubeRuntime,
    F: FloatElement,
    I: IntElement,
    BT: BoolElement,
{
    fn fused_layer_norm_with_stats(
        x: CubeTensor<R>,
        gamma: CubeTensor<R>,
        beta: CubeTensor<R>,
        eps: f64,
    ) -> (CubeTensor<R>, CubeTensor<R>, CubeTensor<R>) {
        layer_norm_forward_cube(x, gamma, beta, eps)
    }

    fn fused_layer_norm_backward(
        x: CubeTensor<R>,
        gamma: CubeTensor<R>,
        grad_out: CubeTensor<R>,
        mean: CubeTensor<R>,
        rstd: CubeTensor<R>,
    ) -> (CubeTensor<R>, CubeTensor<R>, CubeTensor<R>) {
        layer_norm_backward_cube(x, gamma, grad_out, mean, rstd)
    }
}

/// Reference path: the workspace's CPU inner backend.
impl LayerNormKernel for Flex {}

/// Reference path: NdArray (the f64 reference backend of the tests).
impl<E: FloatNdArrayElement, I: IntNdArrayElement, Q: QuantElement> LayerNormKernel
    for NdArray<E, I, Q>
where
    NdArrayTensor: From<SharedArray<E>>,
    NdArrayTensor: From<SharedArray<I>>,
{
}
