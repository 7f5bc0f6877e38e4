//! Evaluation on the held-out split: top-1 and top-5 accuracy and the mean cross-entropy, with
//! batch norm in inference mode.

use super::batch::{Upload, correct_count};
use super::classify::Classify;
use super::source::BatchSource;
use anyhow::Result;
use burn::nn::loss::CrossEntropyLossConfig;
use burn::tensor::backend::Backend;
use burn::tensor::{Int, Tensor, Transaction};

/// Predictions counted as top-k: the `TOP_K` highest logits (all of them with fewer classes).
const TOP_K: usize = 5;

/// Top-1 and top-5 accuracy and mean cross-entropy of `model` over at most `max_batches`
/// batches of `loader`'s epoch 0 (a capped loader shuffles with a fixed seed, so its first
/// batches are a sample of the whole split).
///
/// `model` is the inner (non-autodiff) model, so batch norm uses its running statistics and
/// dropout is off. Counts and losses are summed on the device and read back once at the end.
pub fn evaluate<B: Backend, H: Upload<B>, M: Classify<B, H>, S: BatchSource<H>>(
    model: &M,
    loader: &S,
    max_batches: Option<usize>,
    device: &B::Device,
) -> Result<EvalResult> {
    let loss_fn = CrossEntropyLossConfig::new().init(device);
    let mut sums: Option<Sums<B>> = None;
    let mut samples = 0usize;
    for batch in loader.batches(0).take(max_batches.unwrap_or(usize::MAX)) {
        let batch = batch?;
        let n = S::samples(&batch);
        samples += n;
        let (logits, labels) = model.classify(batch.upload(device));
        // The loss is a mean over the batch: weighted by its samples.
        let loss = loss_fn
            .forward(logits.clone(), labels.clone())
            .mul_scalar(n as f64);
        let top_k = top_k_count(logits.clone(), labels.clone());
        let top_1 = correct_count(logits, labels);
        sums = Some(match sums {
            Some((c1, ck, l)) => (c1 + top_1, ck + top_k, l + loss),
            None => (top_1, top_k, loss),
        });
    }
    let Some((top_1, top_k, loss)) = sums else {
        return Ok(EvalResult::default());
    };
    // One read for the three sums.
    let data = Transaction::default()
        .register(top_1)
        .register(top_k)
        .register(loss)
        .execute();
    let count = |i: usize| data[i].iter::<i64>().next().unwrap_or(0) as usize;
    let loss_sum = data[2].iter::<f64>().next().unwrap_or(f64::NAN);
    Ok(EvalResult {
        samples,
        correct: count(0),
        top5_correct: count(1),
        loss: loss_sum / samples as f64,
    })
}

/// (top-1 correct, top-k correct, summed loss) over the batches so far, on the device.
type Sums<B> = (Tensor<B, 1, Int>, Tensor<B, 1, Int>, Tensor<B, 1>);

/// Samples whose label is among the `TOP_K` highest logits, as a one-element device tensor.
///
/// logits: `[batch, classes]`, labels: `[batch]` → `[1]`.
fn top_k_count<B: Backend>(logits: Tensor<B, 2>, labels: Tensor<B, 1, Int>) -> Tensor<B, 1, Int> {
    let [batch, classes] = logits.dims();
    let k = TOP_K.min(classes);
    let (_, indices) = logits.topk_with_indices(k, 1);
    let labels = labels.reshape([batch, 1]).expand([batch, k]);
    indices.equal(labels).int().sum()
}

/// What [`evaluate`] measured.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct EvalResult {
    /// Samples evaluated.
    pub samples: usize,
    /// Correct top-1 predictions.
    pub correct: usize,
    /// Samples whose label is among the 5 highest logits (all of them with fewer classes).
    pub top5_correct: usize,
    /// Mean cross-entropy over the samples (0 when nothing was evaluated).
    pub loss: f64,
}

impl EvalResult {
    /// Top-1 accuracy (0 when nothing was evaluated).
    pub fn accuracy(&self) -> f64 {
        self.fraction(self.correct)
    }

    /// Top-5 accuracy (0 when nothing was evaluated).
    pub fn top5_accuracy(&self) -> f64 {
        self.fraction(self.top5_correct)
    }

    fn fraction(&self, count: usize) -> f64 {
        if self.samples == 0 {
            0.0
        } else {
            count as f64 / self.samples as f64
        }
    }
}
