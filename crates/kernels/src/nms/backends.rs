//! [`NmsKernel`] for Burn's backends: the CubeCL kernels for [`CubeBackend`]; the host for the
//! CPU backends (the trait's provided methods); and the wrappers (`Fusion<B>`, `Autodiff<B>`,
//! burnacc's `Acc<B>`) passing their inner tensors to `B`. NMS is not differentiable and ends
//! on the host, so a wrapper resolves its inputs and calls `B` at once rather than recording
//! an operation.

use burn::backend::Autodiff;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::ndarray::{
    FloatNdArrayElement, IntNdArrayElement, NdArrayTensor, QuantElement, SharedArray,
};
use burn::backend::{Flex, NdArray};
use burn::tensor::ops::{FloatTensor, IntTensor};
use burn_cubecl::tensor::CubeTensor;
use burn_cubecl::{BoolElement, CubeBackend, CubeRuntime, FloatElement, IntElement};
use burn_fusion::{Fusion, FusionBackend};
use burnacc_backend::Acc;

use super::launch::{soft_nms_cube, suppression_mask_cube};
use super::{NmsKernel, SoftNmsConfig};

impl<R, F, I, BT> NmsKernel for CubeBackend<R, F, I, BT>
where
    R: CubeRuntime,
    F: FloatElement,
    I: IntElement,
    BT: BoolElement,
{
    fn nms_on_device(_device: &Self::Device) -> bool {
        true
    }

    fn nms_suppression_mask(
        boxes: CubeTensor<R>,
        classes: CubeTensor<R>,
        iou_threshold: f32,
        offset: f32,
    ) -> Vec<u32> {
        suppression_mask_cube(boxes, classes, iou_threshold, offset)
    }

    fn soft_nms_segments(
        boxes: CubeTensor<R>,
        scores: CubeTensor<R>,
        segments: &[usize],
        config: &SoftNmsConfig,
    ) -> Vec<(usize, f32)> {
        soft_nms_cube(boxes, scores, segments, config)
    }
}

/// Host path: the workspace's CPU inner backend.
impl NmsKernel for Flex {}

/// Host path: NdArray.
impl<E: FloatNdArrayElement, I: IntNdArrayElement, Q: QuantElement> NmsKernel for NdArray<E, I, Q>
where
    NdArrayTensor: From<SharedArray<E>>,
    NdArrayTensor: From<SharedArray<I>>,
{
}

impl<B: FusionBackend + NmsKernel> NmsKernel for Fusion<B> {
    fn nms_on_device(device: &Self::Device) -> bool {
        B::nms_on_device(device)
    }

    fn nms_suppression_mask(
        boxes: FloatTensor<Self>,
        classes: IntTensor<Self>,
        iou_threshold: f32,
        offset: f32,
    ) -> Vec<u32> {
        let boxes = boxes.client.clone().resolve_tensor_float::<B>(boxes);
        let classes = classes.client.clone().resolve_tensor_int::<B>(classes);
        B::nms_suppression_mask(boxes, classes, iou_threshold, offset)
    }

    fn soft_nms_segments(
        boxes: FloatTensor<Self>,
        scores: FloatTensor<Self>,
        segments: &[usize],
        config: &SoftNmsConfig,
    ) -> Vec<(usize, f32)> {
        let boxes = boxes.client.clone().resolve_tensor_float::<B>(boxes);
        let scores = scores.client.clone().resolve_tensor_float::<B>(scores);
        B::soft_nms_segments(boxes, scores, segments, config)
    }
}

impl<B: NmsKernel, C: CheckpointStrategy> NmsKernel for Autodiff<B, C> {
    fn nms_on_device(device: &Self::Device) -> bool {
        B::nms_on_device(device)
    }

    fn nms_suppression_mask(
        boxes: FloatTensor<Self>,
        classes: IntTensor<Self>,
        iou_threshold: f32,
        offset: f32,
    ) -> Vec<u32> {
        B::nms_suppression_mask(boxes.primitive, classes, iou_threshold, offset)
    }

    fn soft_nms_segments(
        boxes: FloatTensor<Self>,
        scores: FloatTensor<Self>,
        segments: &[usize],
        config: &SoftNmsConfig,
    ) -> Vec<(usize, f32)> {
        B::soft_nms_segments(boxes.primitive, scores.primitive, segments, config)
    }
}

/// `Acc<B>` shares `B`'s primitives: the calls go to `B` as they are.
impl<B: NmsKernel> NmsKernel for Acc<B> {
    fn nms_on_device(device: &Self::Device) -> bool {
        B::nms_on_device(device)
    }

    fn nms_suppression_mask(
        boxes: FloatTensor<Self>,
        classes: IntTensor<Self>,
        iou_threshold: f32,
        offset: f32,
    ) -> Vec<u32> {
        B::nms_suppression_mask(boxes, classes, iou_threshold, offset)
    }

    fn soft_nms_segments(
        boxes: FloatTensor<Self>,
        scores: FloatTensor<Self>,
        segments: &[usize],
        config: &SoftNmsConfig,
    ) -> Vec<(usize, f32)> {
        B::soft_nms_segments(boxes, scores, segments, config)
    }
}
