//! Samples, batches and the dataset trait shared by every image dataset and the loader.
//!
//! Pixels stay 8-bit from decoding to the device: a sample is its `[channels, height, width]`
//! u8 values and a batch carries its dataset's [`Normalize`], applied on the device after the
//! upload (a quarter of the bytes of normalised f32) or on the host by
//! [`HostBatch::normalized`], the reference.

use crate::DataError;
use crate::transform::Normalize;

/// One decoded and transformed (resized, cropped, flipped) image with its class.
#[derive(Clone, Debug, PartialEq)]
pub struct ImageSample {
    /// Pixels, `[channels, height, width]` row-major u8 (not normalised).
    pub pixels: Vec<u8>,
    /// `[channels, height, width]`.
    pub shape: [usize; 3],
    /// Class index in `0..num_classes`.
    pub label: usize,
}

/// A batch of samples as plain host vectors; the trainer turns it into tensors.
#[derive(Clone, Debug, PartialEq)]
pub struct HostBatch {
    /// Pixels, `[batch, channels, height, width]` row-major u8, not normalised.
    pub pixels: Vec<u8>,
    /// `[batch, channels, height, width]`; `batch` may be below the configured batch size
    /// for the last batch (without `drop_last`) or when corrupt samples were skipped.
    pub shape: [usize; 4],
    /// Class indices, `[batch]`.
    pub labels: Vec<i64>,
    /// The dataset's normalisation, for `channels` channels.
    pub normalize: Normalize,
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

    /// The images normalised on the host: `[batch, channels, height, width]` f32,
    /// `(x / 255 - mean[c]) / std[c]` — the reference for the trainer's on-device
    /// normalisation.
    pub fn normalized(&self) -> Vec<f32> {
        let [_, channels, h, w] = self.shape;
        let mut out = Vec::with_capacity(self.pixels.len());
        for image in self.pixels.chunks(channels * h * w) {
            out.extend(self.normalize.apply_u8(image));
        }
        out
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

    /// How the u8 pixels become model inputs (one `(mean, std)` per channel).
    fn normalize(&self) -> Normalize;

    /// Sample `index` (in `0..len()`), with random augmentation drawn from `rng_seed` alone, so
    /// the same `(index, rng_seed)` always gives the same sample. `Ok(None)` means the sample
    /// is corrupt and the dataset's policy is to skip it.
    fn get(&self, index: usize, rng_seed: u64) -> Result<Option<ImageSample>, DataError>;
}
