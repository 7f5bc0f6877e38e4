//! [`SoftmaxKernel`] for Burn's backends: the provided methods, whose backward is each
//! backend's window-softmax backward (CubeCL's kernel on [`CubeBackend`], one recorded custom
//! operation on `Fusion<B>`, the plain-Burn reference on the CPU backends).

use burn::backend::ndarray::{
    FloatNdArrayElement, IntNdArrayElement, NdArrayTensor, QuantElement, SharedArray,
};
use burn::backend::{Flex, NdArray};
use burn_cubecl::{BoolElement, CubeBackend, CubeRuntime, FloatElement, IntElement};
use burn_fusion::{Fusion, FusionBackend};

use super::SoftmaxKernel;
use crate::swin_attention::SwinAttentionKernel;

impl<R, F, I, BT> SoftmaxKernel for CubeBackend<R, F, I, BT>
where
    R: CubeRuntime,
    F: FloatElement,
    I: IntElement,
    BT: BoolElement,
{
}

/// Under fusion the forward is Burn's decomposed softmax, which its reduction fusers fuse; the
/// backward is one custom operation.
impl<B: FusionBackend + SwinAttentionKernel> SoftmaxKernel for Fusion<B> {}

/// Reference path: the workspace's CPU inner backend.
impl SoftmaxKernel for Flex {}

/// Reference path: NdArray (the f64 reference backend of the tests).
impl<E: FloatNdArrayElement, I: IntNdArrayElement, Q: QuantElement> SoftmaxKernel
    for NdArray<E, I, Q>
where
    NdArrayTensor: From<SharedArray<E>>,
    NdArrayTensor: From<SharedArray<I>>,
{
}
