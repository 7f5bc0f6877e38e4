//! The NMS functions on a backend whose [`NmsKernel`] runs on its device: the inputs are checked
//! and ordered there, the parallel part runs as a kernel, and only what the sequential part
//! needs comes back (the scores to rank, the suppression bitmask; for soft-NMS the kept rows).

use burn::tensor::backend::Backend;
use burn::tensor::{Int, Tensor, TensorData};

use super::input::{check_boxes_on_device, floats_to_host};
use super::{NmsError, NmsKernel, SoftNmsConfig, reference};

/// `values` as an index tensor on `device`.
pub(super) fn index_tensor<B: Backend>(values: &[usize], device: &B::Device) -> Tensor<B, 1, Int> {
    let len = values.len();
    let values: Vec<i64> = values.iter().map(|&i| i as i64).collect();
    Tensor::from_data(TensorData::new(values, [len]), device)
}

/// Greedy NMS of `n ≥ 1` boxes (within each class of `classes` when given): the indices kept,
/// by decreasing score, ties by index. torchvision's CUDA path: rank by score, the IoU
/// bitmask of every pair on the device, the greedy pass over it on the host.
pub(super) fn hard_nms<B: NmsKernel>(
    boxes: Tensor<B, 2>,
    scores: Tensor<B, 1>,
    classes: Option<Tensor<B, 1, Int>>,
    iou_threshold: f32,
    offset: f32,
) -> Result<Vec<usize>, NmsError> {
    check_boxes_on_device(&boxes)?;
    let order = reference::by_decreasing_score(&floats_to_host(&scores));
    let n = order.len();
    let device = boxes.device();
    let ranked = index_tensor::<B>(&order, &device);
    // One class for all: the same kernel, every pair compared.
    let classes = match classes {
        Some(classes) => classes.select(0, ranked.clone()),
        None => Tensor::zeros([n], &device),
    };
    let mask = B::nms_suppression_mask(
        boxes.select(0, ranked).into_primitive().tensor(),
        classes.into_primitive(),
        iou_threshold,
        offset,
    );
    let kept = reference::greedy_over_mask(&mask, n);
    Ok(kept.into_iter().map(|rank| order[rank]).collect())
}

/// mmcv's soft-NMS of `n ≥ 1` boxes (within each class of `classes` when given, merged by
/// decreasing decayed score, ties by index): `(index, decayed score)` of the boxes kept.
pub(super) fn soft_nms<B: NmsKernel>(
    boxes: Tensor<B, 2>,
    scores: Tensor<B, 1>,
    classes: Option<&[i64]>,
    config: &SoftNmsConfig,
) -> Result<Vec<(usize, f32)>, NmsError> {
    check_boxes_on_device(&boxes)?;
    let n = boxes.dims()[0];
    let (members, segments, boxes, scores) = match classes {
        Some(classes) => {
            let (members, segments) = reference::group_by_class(classes);
            let grouped = index_tensor::<B>(&members, &boxes.device());
            let boxes = boxes.select(0, grouped.clone());
            (members, segments, boxes, scores.select(0, grouped))
        }
        None => ((0..n).collect(), vec![0, n], boxes, scores),
    };
    let kept = B::soft_nms_segments(
        boxes.into_primitive().tensor(),
        scores.into_primitive().tensor(),
        &segments,
        config,
    );
    let mut kept: Vec<(usize, f32)> = kept
        .into_iter()
        .map(|(position, score)| (members[position], score))
        .collect();
    if classes.is_some() {
        reference::merge_by_score(&mut kept, |_, score| score);
    }
    Ok(kept)
}
