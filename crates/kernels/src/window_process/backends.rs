//! [`WindowProcessKernel`] for Burn's backends: the CubeCL kernels for [`CubeBackend`], the
//! reference (the trait's provided methods) for the CPU backends.

use burn::backend::ndarray::{
    FloatNdArrayElement, IntNdArrayElement, NdArrayTensor, QuantElement, SharedArray,
};
use burn::backend::{Flex, NdArray};
use burn_cubecl::tensor::CubeTensor;
use burn_cubecl::{BoolElement, CubeBackend, CubeRuntime, FloatElement, IntElement};

use super::launch::{window_process_cube, window_process_reverse_cube};
use super::{WindowGeometry, WindowProcessKernel};

impl<R, F, I, BT> WindowProcessKernel for CubeBackend<R, F, I, BT>
where
    R: CubeRuntime,
    F: FloatElement,
    I: IntElement,
    BT: BoolElement,
{
    fn fused_window_process(x: CubeTensor<R>, geometry: WindowGeometry) -> CubeTensor<R> {
        window_process_cube(x, geometry)
    }

    fn fused_window_process_reverse(
        windows: CubeTensor<R>,
        geometry: WindowGeometry,
    ) -> CubeTensor<R> {
        window_process_reverse_cube(windows, geometry)
    }
}

/// Reference path: the workspace's CPU inner backend.
impl WindowProcessKernel for Flex {}

/// Reference path: NdArray (the f64 reference backend of the tests).
impl<E: FloatNdArrayElement, I: IntNdArrayElement, Q: QuantElement> WindowProcessKernel
    for NdArray<E, I, Q>
where
    NdArrayTensor: From<SharedArray<E>>,
    NdArrayTensor: From<SharedArray<I>>,
{
}
