//! Host batches → device tensors.

use burn::tensor::backend::Backend;
use burn::tensor::{Int, Tensor, TensorData};
use burnacc_datasets::HostBatch;
use burnacc_datasets::text::TextBatch;
use burnacc_models::BertInput;

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

/// Uploads a text batch: ids `[rows, seq_len]`, the attention bias built on the device from
/// segment ids, `[CLS]` indices and labels `[samples]`.
pub fn upload_text<B: Backend>(
    batch: TextBatch,
    device: &B::Device,
) -> (BertInput<B>, Tensor<B, 1, Int>) {
    let shape = [batch.rows, batch.seq_len];
    let ids =
        |values: Vec<i64>| Tensor::<B, 2, Int>::from_data(TensorData::new(values, shape), device);
    let samples = batch.labels.len();
    let input = BertInput::new(
        ids(batch.input_ids),
        ids(batch.token_type_ids),
        ids(batch.position_ids),
        ids(batch.segment_ids),
        Tensor::from_data(TensorData::new(batch.cls_index, [samples]), device),
    );
    let labels = Tensor::from_data(TensorData::new(batch.labels, [samples]), device);
    (input, labels)
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
