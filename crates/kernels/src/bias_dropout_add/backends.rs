//! [`BiasDropoutAddKernel`] for Burn's backends: the CubeCL kernels for [`CubeBackend`], the
//! reference (the trait's provided methods) for the CPU backends.

use burn::backend::ndarray::{
    FloatNdArrayElement, IntNdArrayElement, NdArrayTensor, QuantElement, SharedArray,
};
use burn::backend::{Flex, NdArray};
use burn_cubecl::tensor::CubeTensor;
use burn_cubecl::{BoolElement, CubeBackend, CubeRuntime, FloatElement, IntElement};

use super::BiasDropoutAddKernel;
use super::launch::{bias_dropout_add_backward_cube, bias_dropout_add_forward_cube};

impl<R, F, I, BT> BiasDropoutAddKernel for CubeBackend<R, F, I, BT>
where
    R: CubeRuntime,
    F: FloatElement,
    I: IntElement,
    BT: BoolElement,
{
    fn fused_bias_dropout_add(
        x: CubeTensor<R>,
        bias: Option<CubeTensor<R>>,
        residual: CubeTensor<R>,
        p: f64,
        seed: Option<CubeTensor<R>>,
    ) -> CubeTensor<R> {
        bias_dropout_add_forward_cube(x, bias, residual, p, seed)
    }

    fn fused_bias_dropout_add_backward(
        grad_out: CubeTensor<R>,
        p: f64,
        seed: Option<CubeTensor<R>>,
        with_bias: bool,
    ) -> (CubeTensor<R>, Option<CubeTensor<R>>) {
        bias_dropout_add_backward_cube(grad_out, p, seed, with_bias)
    }
}

/// Reference path: the workspace's CPU inner backend.
impl BiasDropoutAddKernel for Flex {}

/// Reference path: NdArray (the f64 reference backend of the tests).
impl<E: FloatNdArrayElement, I: IntNdArrayElement, Q: QuantElement> BiasDropoutAddKernel
    for NdArray<E, I, Q>
where
    NdArrayTensor: From<SharedArray<E>>,
    NdArrayTensor: From<SharedArray<I>>,
{
}
