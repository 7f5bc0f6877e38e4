//! What the NMS functions check before any work, and their inputs read to the host. Each error
//! names the argument ([`NmsError`]).

use burn::tensor::backend::Backend;
use burn::tensor::{ElementConversion, Int, Tensor};

use super::{NmsError, SoftNmsConfig, SoftNmsMethod};

/// `boxes` is `[N, 4]` and `scores` (and `classes`) `[N]`; returns `N`.
pub(super) fn check_shapes<B: Backend>(
    boxes: &Tensor<B, 2>,
    scores: &Tensor<B, 1>,
    classes: Option<&Tensor<B, 1, Int>>,
) -> Result<usize, NmsError> {
    let dims = boxes.dims();
    if dims[1] != 4 {
        return Err(NmsError::BoxesShape(dims.to_vec()));
    }
    let n = dims[0];
    let lengths = [
        ("scores", Some(scores.dims()[0])),
        ("classes", classes.map(|c| c.dims()[0])),
    ];
    for (name, got) in lengths {
        match got {
            Some(got) if got != n => {
                return Err(NmsError::Length {
                    name,
                    got,
                    boxes: n,
                });
            }
            _ => {}
        }
    }
    Ok(n)
}

/// The first box that is not `(x1, y1, x2, y2)` with finite coordinates, `x1 <= x2` and
/// `y1 <= y2`, as an error.
fn check_boxes_host(boxes: &[[f32; 4]]) -> Result<(), NmsError> {
    match boxes
        .iter()
        .position(|b| !(b.iter().all(|v| v.is_finite()) && b[0] <= b[2] && b[1] <= b[3]))
    {
        Some(index) => Err(NmsError::InvalidBox {
            index,
            values: boxes[index],
        }),
        None => Ok(()),
    }
}

/// `boxes` (`[N, 4]`, shape checked) on the host as f32 rows, checked.
pub(super) fn boxes_to_host<B: Backend>(boxes: &Tensor<B, 2>) -> Result<Vec<[f32; 4]>, NmsError> {
    let flat: Vec<f32> = boxes
        .to_data()
        .convert::<f32>()
        .to_vec()
        .expect("f32 boxes");
    let boxes: Vec<[f32; 4]> = flat
        .chunks_exact(4)
        .map(|c| [c[0], c[1], c[2], c[3]])
        .collect();
    check_boxes_host(&boxes)?;
    Ok(boxes)
}

/// The check of [`boxes_to_host`] without reading the boxes: one reduction on their device,
/// one value read back; only a bad box brings the boxes to the host, to name it.
pub(super) fn check_boxes_on_device<B: Backend>(boxes: &Tensor<B, 2>) -> Result<(), NmsError> {
    let [n, _] = boxes.dims();
    let low = boxes.clone().slice([0..n, 0..2]);
    let high = boxes.clone().slice([0..n, 2..4]);
    let finite = boxes.clone().is_finite().flatten::<1>(0, 1);
    let ordered = low.lower_equal(high).flatten::<1>(0, 1);
    let all_good = Tensor::cat(vec![finite, ordered], 0)
        .all()
        .int()
        .into_scalar();
    if all_good.elem::<i64>() == 1 {
        Ok(())
    } else {
        boxes_to_host(boxes).map(|_| ())
    }
}

/// `t` on the host, as f32 (scores) or i64 (classes).
pub(super) fn floats_to_host<B: Backend>(t: &Tensor<B, 1>) -> Vec<f32> {
    t.to_data().convert::<f32>().to_vec().expect("f32 values")
}

pub(super) fn ints_to_host<B: Backend>(t: &Tensor<B, 1, Int>) -> Vec<i64> {
    t.to_data().convert::<i64>().to_vec().expect("int values")
}

pub(super) fn check_iou(iou_threshold: f32) -> Result<(), NmsError> {
    if (0.0..=1.0).contains(&iou_threshold) {
        Ok(())
    } else {
        Err(NmsError::IouThreshold(iou_threshold))
    }
}

pub(super) fn check_soft(config: &SoftNmsConfig) -> Result<(), NmsError> {
    check_iou(config.iou_threshold)?;
    if config.method == SoftNmsMethod::Gaussian && (config.sigma.is_nan() || config.sigma <= 0.0) {
        return Err(NmsError::Sigma(config.sigma));
    }
    Ok(())
}
