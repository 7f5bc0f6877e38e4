//! Host batches → device tensors.

use burn::tensor::backend::Backend;
use burn::tensor::{Int, Tensor, TensorData};
use burnacc_datasets::HostBatch;

/// Uploads a batch: images `[batch, channels, height, width]` f32, labels `[batch]` in the
/// backend's int dtype.
pub fn upload<B: Backend>(
    batch: HostBatch,
    device: &B::Device,
) -> (Tensor<B, 4>, Tensor<B, 1, Int>) {
    let n = batch.labels.len();
    let images = Tensor::from_data(TensorData::new(batch.images, batch.shape), device);
    let labels = Tensor::from_data(TensorData::new(batch.labels, [n]), device);
    (images, labels)
}

/// Number of correct arg-max predictions, as a one-element device tensor (no host read).
///
/// logits: `[batch, classes]`, labels: `[batch]` → `[1]`.
pub fn correct_count<B: Backend>(
    logits: Tensor<B, 2>,
    labels: Tensor<B, 1, Int>,
) -> Tensor<B, 1, Int> {
    let predicted = logits.argmax(1).squeeze_dim::<1>(1);
    predicted.equal(labels).int().sum()
}
