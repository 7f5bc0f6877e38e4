//! Samples, batches and the dataset trait shared by every image dataset and the loader.

use crate::DataError;

/// One decoded, transformed and normalised image with its class.
#[derive(Clone, Debug, PartialEq)]
pub struct ImageSample {
    /// Pixels, `[channels, height, width]` row-major f32, normalised
    /// (`(x / 255 - mean[c]) / std[c]`, so roughly in `[-2.2, 2.7]` for ImageNet statistics).
    pub image: Vec<f32>,
    /// `[channels, height, width]`.
    pub shape: [usize; 3],
    /// Class index in `0..num_classes`.
    pub label: usize,
}

/// A batch of samples as plain host vectors; the trainer turns it into tensors.
#[derive(Clone, Debug, PartialEq)]
pub struct HostBatch {
    /// Pixels, `[batch, channels, height, width]` row-major f32, normalised like [`ImageSample`].
    pub images: Vec<f32>,
    /// `[batch, channels, height, width]`; `batch` may be below the configured batch size
    /// for the last batch (without `drop_last`) or when corrupt samples were skipped.
    pub shape: [usize; 4],
    /// Class indices, `[batch]`.
    pub labels: Vec<i64>,
}

impl HostBatch {
    /// Number of samples in the batch.
    pub fn len(&self) -> usize {
        self.labels.len()
    }

    /// Whether the batch holds no sample.
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }
}

/// A random-access image classification dataset, usable from several loader threads at once.
pub trait ImageDataset: Send + Sync {
    /// Number of samples.
    fn len(&self) -> usize;

    /// Whether the dataset has no sample.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of classes; labels are in `0..num_classes()`.
    fn num_classes(&self) -> usize;

    /// `[channels, height, width]` of every sample.
    fn shape(&self) -> [usize; 3];

    /// Sample `index` (in `0..len()`), with random augmentation drawn from `rng_seed` alone, so
    /// the same `(index, rng_seed)` always gives the same sample. `Ok(None)` means the sample
    /// is corrupt and the dataset's policy is to skip it.
    fn get(&self, index: usize, rng_seed: u64) -> Result<Option<ImageSample>, DataError>;
}
