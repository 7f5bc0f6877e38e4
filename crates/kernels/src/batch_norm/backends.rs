//! [`BatchNormKernel`] for Burn's backends: the CubeCL kernels for [`CubeBackend`], the
//! reference (the trait's provided methods) for the CPU backends.

use burn::backend::ndarray::{
    FloatNdArrayElement, IntNdArrayElement, NdArrayTensor, QuantElement, SharedArray,
};
use burn::backend::{Flex, NdArray};
use burn_cubecl::tensor::CubeTensor;
use burn_cubecl::{BoolElement, CubeBackend, CubeRuntime, FloatElement, IntElement};

use super::BatchNormKernel;
use super::launch::{batch_norm_backward_cube, batch_norm_forward_cube};

impl<R, F, I, BT> BatchNormKernel for CubeBackend<R, F, I, BT>
where
    R: CubeRuntime,
    F: FloatElement,
    I: IntElement,
    BT: BoolElement,
{
    fn fused_batch_norm_with_stats(
        x: CubeTensor<R>,
        gamma: CubeTensor<R>,
        beta: CubeTensor<R>,
        eps: f64,
        relu: bool,
    ) -> (CubeTensor<R>, CubeTensor<R>, CubeTensor<R>) {
        batch_norm_forward_cube(x, gamma, beta, eps, relu)
    }

    fn fused_batch_norm_backward(
        x: CubeTensor<R>,
        gamma: CubeTensor<R>,
        grad_out: CubeTensor<R>,
        mean: CubeTensor<R>,
        rstd: CubeTensor<R>,
        relu_output: Option<CubeTensor<R>>,
    ) -> (CubeTensor<R>, CubeTensor<R>, CubeTensor<R>) {
        batch_norm_backward_cube(x, gamma, grad_out, mean, rstd, relu_output)
    }
}

/// Reference path: the workspace's CPU inner backend.
impl BatchNormKernel for Flex {}

/// Reference path: NdArray (the f64 reference backend of the tests).
impl<E: FloatNdArrayElement, I: IntNdArrayElement, Q: QuantElement> BatchNormKernel
    for NdArray<E, I, Q>
where
    NdArrayTensor: From<SharedArray<E>>,
    NdArrayTensor: From<SharedArray<I>>,
{
}
