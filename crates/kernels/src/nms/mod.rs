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
//! The selection is sequential, so these run on the host today: the tensors are read once,
//! the boxes selected by [`reference`](mod@reference), and the indices (and decayed scores)
//! placed on the tensors' device. Inputs are checked first; each error names the argument.

pub mod reference;

pub use reference::SoftNmsMethod;

use burn::tensor::backend::Backend;
use burn::tensor::{Int, Tensor, TensorData};

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

/// `boxes` and `scores` on the host, checked.
fn read<B: Backend>(
    boxes: &Tensor<B, 2>,
    scores: &Tensor<B, 1>,
) -> Result<(Vec<[f32; 4]>, Vec<f32>), NmsError> {
    let dims = boxes.dims();
    if dims[1] != 4 {
        return Err(NmsError::BoxesShape(dims.to_vec()));
    }
    let [n] = scores.dims();
    if n != dims[0] {
        return Err(NmsError::Length {
            name: "scores",
            got: n,
            boxes: dims[0],
        });
    }
    let flat: Vec<f32> = boxes
        .to_data()
        .convert::<f32>()
        .to_vec()
        .expect("f32 boxes");
    let boxes: Vec<[f32; 4]> = flat
        .chunks_exact(4)
        .map(|c| [c[0], c[1], c[2], c[3]])
        .collect();
    if let Some(index) = boxes
        .iter()
        .position(|b| !(b.iter().all(|v| v.is_finite()) && b[0] <= b[2] && b[1] <= b[3]))
    {
        return Err(NmsError::InvalidBox {
            index,
            values: boxes[index],
        });
    }
    let scores = scores
        .to_data()
        .convert::<f32>()
        .to_vec()
        .expect("f32 scores");
    Ok((boxes, scores))
}

fn check_iou(iou_threshold: f32) -> Result<(), NmsError> {
    if (0.0..=1.0).contains(&iou_threshold) {
        Ok(())
    } else {
        Err(NmsError::IouThreshold(iou_threshold))
    }
}

fn classes_of<B: Backend>(classes: &Tensor<B, 1, Int>, boxes: usize) -> Result<Vec<i64>, NmsError> {
    let [n] = classes.dims();
    if n != boxes {
        return Err(NmsError::Length {
            name: "classes",
            got: n,
            boxes,
        });
    }
    Ok(classes
        .to_data()
        .convert::<i64>()
        .to_vec()
        .expect("int classes"))
}

fn indices<B: Backend>(kept: &[usize], device: &B::Device) -> Tensor<B, 1, Int> {
    let values: Vec<i64> = kept.iter().map(|&i| i as i64).collect();
    Tensor::from_data(TensorData::new(values, [kept.len()]), device)
}

/// torchvision's `nms`: indices of the boxes kept, `[K]`, by decreasing score (ties by index).
/// A box is dropped when its IoU with a kept box of higher score exceeds `iou_threshold`.
pub fn nms<B: Backend>(
    boxes: Tensor<B, 2>,
    scores: Tensor<B, 1>,
    iou_threshold: f32,
) -> Result<Tensor<B, 1, Int>, NmsError> {
    nms_with_offset(boxes, scores, iou_threshold, 0.0)
}

/// [`nms`] with mmcv's legacy pixel areas (`x2 − x1 + 1`): TorchAcc's `nms_normal`.
pub fn nms_normal<B: Backend>(
    boxes: Tensor<B, 2>,
    scores: Tensor<B, 1>,
    iou_threshold: f32,
) -> Result<Tensor<B, 1, Int>, NmsError> {
    nms_with_offset(boxes, scores, iou_threshold, 1.0)
}

fn nms_with_offset<B: Backend>(
    boxes: Tensor<B, 2>,
    scores: Tensor<B, 1>,
    iou_threshold: f32,
    offset: f32,
) -> Result<Tensor<B, 1, Int>, NmsError> {
    check_iou(iou_threshold)?;
    let (host_boxes, host_scores) = read(&boxes, &scores)?;
    let kept = reference::nms_host(&host_boxes, &host_scores, iou_threshold, offset);
    Ok(indices(&kept, &boxes.device()))
}

/// torchvision's `batched_nms`: [`nms`] within each class of `classes` (`[N]`), boxes of
/// different classes never suppressing each other; indices by decreasing score (ties by
/// index).
pub fn batched_nms<B: Backend>(
    boxes: Tensor<B, 2>,
    scores: Tensor<B, 1>,
    classes: Tensor<B, 1, Int>,
    iou_threshold: f32,
) -> Result<Tensor<B, 1, Int>, NmsError> {
    check_iou(iou_threshold)?;
    let (host_boxes, host_scores) = read(&boxes, &scores)?;
    let host_classes = classes_of(&classes, host_boxes.len())?;
    let kept = reference::batched_host(
        &host_boxes,
        &host_scores,
        &host_classes,
        |b, s| {
            let kept = reference::nms_host(b, s, iou_threshold, 0.0);
            kept.into_iter().map(|i| (i, ())).collect()
        },
        |i, ()| host_scores[i],
    );
    let kept: Vec<usize> = kept.into_iter().map(|(i, ())| i).collect();
    Ok(indices(&kept, &boxes.device()))
}

fn check_soft(config: &SoftNmsConfig) -> Result<(), NmsError> {
    check_iou(config.iou_threshold)?;
    if config.method == SoftNmsMethod::Gaussian && (config.sigma.is_nan() || config.sigma <= 0.0) {
        return Err(NmsError::Sigma(config.sigma));
    }
    Ok(())
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
    let indices = indices(&index, &device);
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
pub fn soft_nms<B: Backend>(
    boxes: Tensor<B, 2>,
    scores: Tensor<B, 1>,
    config: SoftNmsConfig,
) -> Result<SoftNmsOutput<B>, NmsError> {
    check_soft(&config)?;
    let (host_boxes, host_scores) = read(&boxes, &scores)?;
    let kept = soft_nms_on_host(&host_boxes, &host_scores, &config);
    Ok(soft_output(&kept, boxes))
}

/// mmcv's `batched_nms` with `type='soft_nms'`: [`soft_nms`] within each class of `classes`;
/// rows by decreasing decayed score (ties by index).
pub fn batched_soft_nms<B: Backend>(
    boxes: Tensor<B, 2>,
    scores: Tensor<B, 1>,
    classes: Tensor<B, 1, Int>,
    config: SoftNmsConfig,
) -> Result<SoftNmsOutput<B>, NmsError> {
    check_soft(&config)?;
    let (host_boxes, host_scores) = read(&boxes, &scores)?;
    let host_classes = classes_of(&classes, host_boxes.len())?;
    let kept = reference::batched_host(
        &host_boxes,
        &host_scores,
        &host_classes,
        |b, s| soft_nms_on_host(b, s, &config),
        |_, score| score,
    );
    Ok(soft_output(&kept, boxes))
}
