//! Evaluation on the held-out split: top-1 accuracy with batch norm in inference mode.

use super::batch::correct_count;
use super::classify::Classify;
use super::source::BatchSource;
use anyhow::Result;
use burn::tensor::backend::Backend;
use burn::tensor::{Int, Tensor};

/// Top-1 accuracy of `model` over at most `max_batches` batches of `loader`'s first epoch.
///
/// `model` is the inner (non-autodiff) model, so batch norm uses its running statistics and
/// dropout is off. Correct counts are summed on the device and read back once at the end.
pub fn evaluate<B: Backend, H, M: Classify<B, H>, S: BatchSource<H>>(
    model: &M,
    loader: &S,
    max_batches: Option<usize>,
    device: &B::Device,
) -> Result<EvalResult> {
    let mut correct: Option<Tensor<B, 1, Int>> = None;
    let mut samples = 0usize;
    for batch in loader.batches(0).take(max_batches.unwrap_or(usize::MAX)) {
        let batch = batch?;
        samples += S::samples(&batch);
        let (logits, labels) = model.classify(batch, device);
        let batch_correct = correct_count(logits, labels);
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
