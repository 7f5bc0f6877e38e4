//! Non-maximum suppression for detection models (TorchAcc's `nms`, `nms_normal`, `soft_nms`,
//! `batched_soft_nms`; torchvision's `nms` / `batched_nms`, mmcv's `soft_nms`), on any Burn
//! backend, over boxes `[N, 4]` as `(x1, y1, x2, y2)` and scores `[N]`.
//!
//! | function | semantics of | areas and overlaps |
//! |----------|--------------|--------------------|
//! | [`nms`], [`batched_nms`] | torchvision (`torchvision.ops.nms`, `batched_nms`) | `x2 − x1` (continuous coordinates) |
//! | [`nms_normal`] | mmcv's `nms(…, offset=1)`, the legacy pixel convention of Detectron/mmdet v1 models | `x2 − x1 + 1` (the last pixel counts) |
//! | [`soft_nms`], [`batched_soft_nms`] | mmcv's `soft_nms` / `batched_nms(type='soft_nms')` | either (`offset`) |
//!
//! Users of torchvision models (and of mmdet ≥ 2, which uses offset 0) want [`nms`]; models
//! trained with the legacy `+1` areas (mmdet v1, Detectron) want [`nms_normal`].
//!
//! On a CubeCL device ([`NmsKernel`]) the parallel part runs there, as torchvision's and
//! mmcv's CUDA kernels do: for greedy NMS the IoU test of every pair as a bitmask
//! (`kernel::suppression_mask_kernel`), then the greedy pass over it on the host; for soft-NMS
//! mmcv's loop in one cube per class, its argmax, score decay and dropping of boxes spread over
//! the units (`kernel::soft_nms_kernel`). Elsewhere the boxes are read once and selected on the host by
//! [`reference`](mod@reference). Both give the same indices. Inputs are checked first; each
//! error names the argument. [`counters`] prove the device path ran.

mod backends;
pub mod counters;
mod device;
mod input;
mod kernel;
pub mod launch;
pub mod reference;

pub use reference::SoftNmsMethod;

use burn::tensor::backend::Backend;
use burn::tensor::ops::{FloatTensor, IntTensor};
use burn::tensor::{Int, Tensor, TensorData, TensorPrimitive};

use device::index_tensor;
use input::{boxes_to_host, check_iou, check_shapes, check_soft, floats_to_host, ints_to_host};

/// Bad input to an NMS function; each names the argument and the value.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum NmsError {
    /// `boxes` is not `[N, 4]`.
    #[error("boxes must be [N, 4] (x1, y1, x2, y2), got {0:?}")]
    BoxesShape(Vec<usize>),
    /// `scores` (or `classes`) has another length than `boxes`.
    #[error("{name} has {got} values for {boxes} boxes")]
    Length {
        /// `scores` or `classes`.
        name: &'static str,
        /// Its length.
        got: usize,
        /// Boxes given.
        boxes: usize,
    },
    /// A box with `x2 < x1` or `y2 < y1`, or a coordinate that is not finite.
    #[error("boxes[{index}] = {values:?} is not (x1, y1, x2, y2) with x1 <= x2 and y1 <= y2")]
    InvalidBox {
        /// Its row.
        index: usize,
        /// Its coordinates.
        values: [f32; 4],
    },
    /// An IoU threshold outside `[0, 1]`.
    #[error("iou_threshold must be in [0, 1], got {0}")]
    IouThreshold(f32),
    /// A Gaussian soft-NMS `sigma` that is not positive.
    #[error("sigma must be > 0, got {0}")]
    Sigma(f32),
}

/// What [`soft_nms`] keeps: rows in selection order (non-increasing decayed score).
#[derive(Debug, Clone)]
pub struct SoftNmsOutput<B: Backend> {
    /// Indices into the input, `[K]`.
    pub indices: Tensor<B, 1, Int>,
    /// The kept boxes, `[K, 4]` (as given).
    pub boxes: Tensor<B, 2>,
    /// Their decayed scores, `[K]`.
    pub scores: Tensor<B, 1>,
}

/// Soft-NMS settings (mmcv's defaults: IoU 0.3, sigma 0.5, min score 1e-3, linear, offset 0).
#[derive(Debug, Clone, Copy)]
pub struct SoftNmsConfig {
    /// Overlap from which `Linear` and `Naive` decay a score.
    pub iou_threshold: f32,
    /// Width of the `Gaussian` decay, `exp(−iou² / sigma)`.
    pub sigma: f32,
    /// Boxes whose decayed score falls below it are dropped.
    pub min_score: f32,
    /// How scores decay.
    pub method: SoftNmsMethod,
    /// 1 for the legacy `+1` pixel areas, 0 otherwise.
    pub offset: f32,
}

impl Default for SoftNmsConfig {
    fn default() -> Self {
        Self {
            iou_threshold: 0.3,
            sigma: 0.5,
            min_score: 1e-3,
            method: SoftNmsMethod::Linear,
            offset: 0.0,
        }
    }
}

/// A backend that can run the parallel part of NMS on its device.
///
/// The provided methods compute on the host (they read the tensors), so any backend can opt
/// in with an empty `impl`; [`burn_cubecl::CubeBackend`] overrides them with the CubeCL
/// kernels and answers `true` to [`NmsKernel::nms_on_device`], and the wrappers (`Fusion`,
/// `Autodiff`, burnacc's `Acc`) pass their inner tensors on. Where `nms_on_device` is false
/// the NMS functions select on the host directly, without these methods.
pub trait NmsKernel: Backend {
    /// Whether the NMS functions should use the methods below on `device` (the device runs
    /// them) rather than read the boxes and select on the host.
    fn nms_on_device(_device: &Self::Device) -> bool {
        false
    }

    /// The suppression bitmask of `boxes` (`[n, 4]`, any float dtype, rows by decreasing
    /// score) with `classes` (`[n]`, same order): `[n · ⌈n/32⌉]` words, row-major, bit `k` of
    /// word `w` of row `i` set iff box `32 w + k` ranks below `i`, has its class and an IoU
    /// with it above `iou_threshold` (areas `x2 − x1 + offset`).
    fn nms_suppression_mask(
        boxes: FloatTensor<Self>,
        classes: IntTensor<Self>,
        iou_threshold: f32,
        offset: f32,
    ) -> Vec<u32> {
        let boxes = Tensor::<Self, 2>::from_primitive(TensorPrimitive::Float(boxes));
        let classes = Tensor::<Self, 1, Int>::from_primitive(classes);
        let boxes = boxes_to_host(&boxes).expect("checked by the caller");
        reference::suppression_mask_host(&boxes, &ints_to_host(&classes), iou_threshold, offset)
    }

    /// mmcv's soft-NMS of each segment `segments[k]..segments[k + 1]` of `boxes` (`[n, 4]`)
    /// and `scores` (`[n]`), any float dtype: segment after segment, the kept boxes as
    /// `(position, decayed score)` in selection order.
    fn soft_nms_segments(
        boxes: FloatTensor<Self>,
        scores: FloatTensor<Self>,
        segments: &[usize],
        config: &SoftNmsConfig,
    ) -> Vec<(usize, f32)> {
        let boxes = Tensor::<Self, 2>::from_primitive(TensorPrimitive::Float(boxes));
        let scores = Tensor::<Self, 1>::from_primitive(TensorPrimitive::Float(scores));
        let boxes = boxes_to_host(&boxes).expect("checked by the caller");
        let scores = floats_to_host(&scores);
        segments
            .windows(2)
            .flat_map(|s| {
                soft_nms_on_host(&boxes[s[0]..s[1]], &scores[s[0]..s[1]], config)
                    .into_iter()
                    .map(move |(p, score)| (s[0] + p, score))
            })
            .collect()
    }
}

/// torchvision's `nms`: indices of the boxes kept, `[K]`, by decreasing score (ties by index).
/// A box is dropped when its IoU with a kept box of higher score exceeds `iou_threshold`.
pub fn nms<B: NmsKernel>(
    boxes: Tensor<B, 2>,
    scores: Tensor<B, 1>,
    iou_threshold: f32,
) -> Result<Tensor<B, 1, Int>, NmsError> {
    greedy_nms(boxes, scores, None, iou_threshold, 0.0)
}

/// [`nms`] with mmcv's legacy pixel areas (`x2 − x1 + 1`): TorchAcc's `nms_normal`.
pub fn nms_normal<B: NmsKernel>(
    boxes: Tensor<B, 2>,
    scores: Tensor<B, 1>,
    iou_threshold: f32,
) -> Result<Tensor<B, 1, Int>, NmsError> {
    greedy_nms(boxes, scores, None, iou_threshold, 1.0)
}

/// torchvision's `batched_nms`: [`nms`] within each class of `classes` (`[N]`), boxes of
/// different classes never suppressing each other; indices by decreasing score (ties by
/// index).
pub fn batched_nms<B: NmsKernel>(
    boxes: Tensor<B, 2>,
    scores: Tensor<B, 1>,
    classes: Tensor<B, 1, Int>,
    iou_threshold: f32,
) -> Result<Tensor<B, 1, Int>, NmsError> {
    greedy_nms(boxes, scores, Some(classes), iou_threshold, 0.0)
}

/// Greedy NMS, within each class of `classes` when given, on the device where the backend
/// can, else on the host.
fn greedy_nms<B: NmsKernel>(
    boxes: Tensor<B, 2>,
    scores: Tensor<B, 1>,
    classes: Option<Tensor<B, 1, Int>>,
    iou_threshold: f32,
    offset: f32,
) -> Result<Tensor<B, 1, Int>, NmsError> {
    check_iou(iou_threshold)?;
    let n = check_shapes(&boxes, &scores, classes.as_ref())?;
    let device = boxes.device();
    let kept = if n > 0 && B::nms_on_device(&device) {
        device::hard_nms(boxes, scores, classes, iou_threshold, offset)?
    } else {
        let host_boxes = boxes_to_host(&boxes)?;
        let host_scores = floats_to_host(&scores);
        match classes {
            None => reference::nms_host(&host_boxes, &host_scores, iou_threshold, offset),
            Some(classes) => {
                let per_class = |b: &[[f32; 4]], s: &[f32]| {
                    let kept = reference::nms_host(b, s, iou_threshold, offset);
                    kept.into_iter().map(|i| (i, ())).collect()
                };
                let kept = reference::batched_host(
                    &host_boxes,
                    &host_scores,
                    &ints_to_host(&classes),
                    per_class,
                    |i, ()| host_scores[i],
                );
                kept.into_iter().map(|(i, ())| i).collect()
            }
        }
    };
    Ok(index_tensor::<B>(&kept, &device))
}

/// [`reference::soft_nms_host`] with `config`'s settings.
fn soft_nms_on_host(
    boxes: &[[f32; 4]],
    scores: &[f32],
    config: &SoftNmsConfig,
) -> Vec<(usize, f32)> {
    reference::soft_nms_host(
        boxes,
        scores,
        config.iou_threshold,
        config.sigma,
        config.min_score,
        config.method,
        config.offset,
    )
}

fn soft_output<B: Backend>(kept: &[(usize, f32)], boxes: Tensor<B, 2>) -> SoftNmsOutput<B> {
    let device = boxes.device();
    let index: Vec<usize> = kept.iter().map(|&(i, _)| i).collect();
    let indices = index_tensor::<B>(&index, &device);
    let scores: Vec<f32> = kept.iter().map(|&(_, s)| s).collect();
    let kept_boxes = if kept.is_empty() {
        Tensor::zeros([0, 4], &device)
    } else {
        boxes.select(0, indices.clone())
    };
    SoftNmsOutput {
        boxes: kept_boxes,
        indices,
        scores: Tensor::from_data(TensorData::new(scores, [kept.len()]), &device),
    }
}

/// mmcv's `soft_nms`: instead of dropping overlapping boxes, decays their scores
/// ([`SoftNmsMethod`]) and drops those that fall under `config.min_score`. Rows in selection
/// order.
pub fn soft_nms<B: NmsKernel>(
    boxes: Tensor<B, 2>,
    scores: Tensor<B, 1>,
    config: SoftNmsConfig,
) -> Result<SoftNmsOutput<B>, NmsError> {
    soft_nms_by_class(boxes, scores, None, config)
}

/// mmcv's `batched_nms` with `type='soft_nms'`: [`soft_nms`] within each class of `classes`;
/// rows by decreasing decayed score (ties by index).
pub fn batched_soft_nms<B: NmsKernel>(
    boxes: Tensor<B, 2>,
    scores: Tensor<B, 1>,
    classes: Tensor<B, 1, Int>,
    config: SoftNmsConfig,
) -> Result<SoftNmsOutput<B>, NmsError> {
    soft_nms_by_class(boxes, scores, Some(classes), config)
}

/// Soft-NMS, within each class of `classes` when given, on the device where the backend can,
/// else on the host.
fn soft_nms_by_class<B: NmsKernel>(
    boxes: Tensor<B, 2>,
    scores: Tensor<B, 1>,
    classes: Option<Tensor<B, 1, Int>>,
    config: SoftNmsConfig,
) -> Result<SoftNmsOutput<B>, NmsError> {
    check_soft(&config)?;
    let n = check_shapes(&boxes, &scores, classes.as_ref())?;
    let classes = classes.map(|c| ints_to_host(&c));
    let kept = if n > 0 && B::nms_on_device(&boxes.device()) {
        device::soft_nms(boxes.clone(), scores, classes.as_deref(), &config)?
    } else {
        let host_boxes = boxes_to_host(&boxes)?;
        let host_scores = floats_to_host(&scores);
        match &classes {
            None => soft_nms_on_host(&host_boxes, &host_scores, &config),
            Some(classes) => reference::batched_host(
                &host_boxes,
                &host_scores,
                classes,
                |b, s| soft_nms_on_host(b, s, &config),
                |_, score| score,
            ),
        }
    };
    Ok(soft_output(&kept, boxes))
}
