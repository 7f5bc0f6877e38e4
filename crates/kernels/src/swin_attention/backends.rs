//! [`SwinAttentionKernel`] for Burn's backends: the CubeCL kernels for [`CubeBackend`], the
//! reference (the trait's provided methods) for the CPU backends.

use burn::backend::ndarray::{
    FloatNdArrayElement, IntNdArrayElement, NdArrayTensor, QuantElement, SharedArray,
};
use burn::backend::{Flex, NdArray};
use burn_cubecl::tensor::CubeTensor;
use burn_cubecl::{BoolElement, CubeBackend, CubeRuntime, FloatElement, IntElement};

use super::SwinAttentionKernel;
use super::launch::{window_softmax_backward_cube, window_softmax_forward_cube};

impl<R, F, I, BT> SwinAttentionKernel for CubeBackend<R, F, I, BT>
where
    R: CubeRuntime,
    F: FloatElement,
    I: IntElement,
    BT: BoolElement,
{
    fn fused_window_softmax(
        scores: CubeTensor<R>,
        table: CubeTensor<R>,
        index: CubeTensor<R>,
        mask: Option<CubeTensor<R>>,
    ) -> CubeTensor<R> {
        window_softmax_forward_cube(scores, table, index, mask)
    }

    fn fused_window_softmax_backward(
        probs: CubeTensor<R>,
        grad_probs: CubeTensor<R>,
    ) -> CubeTensor<R> {
        window_softmax_backward_cube(probs, grad_probs)
    }
}

/// Reference path: the workspace's CPU inner backend.
impl SwinAttentionKernel for Flex {}

/// Reference path: NdArray (the f64 reference backend of the tests).
impl<E: FloatNdArrayElement, I: IntNdArrayElement, Q: QuantElement> SwinAttentionKernel
    for NdArray<E, I, Q>
where
    NdArrayTensor: From<SharedArray<E>>,
    NdArrayTensor: From<SharedArray<I>>,
{
}
