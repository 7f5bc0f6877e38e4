//! Evaluation on the held-out split: top-1 accuracy with batch norm in inference mode.

use super::batch::{correct_count, upload};
use anyhow::Result;
use burn::tensor::backend::Backend;
use burn::tensor::{Int, Tensor};
use burnacc_datasets::Loader;
use burnacc_models::ResNet;

/// Top-1 accuracy of `model` over at most `max_batches` batches of `loader`'s first epoch.
///
/// `model` is the inner (non-autodiff) model, so batch norm uses its running statistics.
/// Correct counts are summed on the device and read back once at the end.
pub fn evaluate<B: Backend>(
    model: &ResNet<B>,
    loader: &Loader,
    max_batches: Option<usize>,
    device: &B::Device,
) -> Result<EvalResult> {
    let mut correct: Option<Tensor<B, 1, Int>> = None;
    let mut samples = 0usize;
    for batch in loader.epoch(0).take(max_batches.unwrap_or(usize::MAX)) {
        let batch = batch?;
        samples += batch.labels.len();
        let (images, labels) = upload::<B>(batch, device);
        let batch_correct = correct_count(model.forward(images), labels);
        correct = Some(match correct {
            Some(total) => total + batch_correct,
            None => batch_correct,
        });
    }
    let correct = match correct {
        Some(total) => total.into_scalar().elem_i64(),
        None => 0,
    };
    Ok(EvalResult {
        samples,
        correct: correct as usize,
    })
}

/// What [`evaluate`] counted.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct EvalResult {
    /// Samples evaluated.
    pub samples: usize,
    /// Correct top-1 predictions.
    pub correct: usize,
}

impl EvalResult {
    /// Fraction correct (0 when nothing was evaluated).
    pub fn accuracy(&self) -> f64 {
        if self.samples == 0 {
            0.0
        } else {
            self.correct as f64 / self.samples as f64
        }
    }
}

trait ElemI64 {
    fn elem_i64(self) -> i64;
}

impl<E: burn::tensor::ElementConversion> ElemI64 for E {
    fn elem_i64(self) -> i64 {
        self.elem::<i64>()
    }
}
