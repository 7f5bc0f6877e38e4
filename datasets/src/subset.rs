//! Subsets of a dataset and a deterministic, class-stratified hold-out split.
//!
//! Typical use: hold out 10% of an image folder for validation, with the eval transform:
//! ```no_run
//! # use std::sync::Arc;
//! # use burnacc_datasets::*;
//! # fn main() -> Result<(), DataError> {
//! let train_folder = ImageFolder::open("data/train", ImageFolderConfig::rgb(ImageTransform::imagenet_train()))?;
//! let eval_folder = train_folder.with_config(ImageFolderConfig::rgb(ImageTransform::imagenet_eval()))?;
//! let split = stratified_split(&train_folder.labels(), 0.1, 42)?;
//! let train = Subset::new(Arc::new(train_folder), split.train)?;
//! let val = Subset::new(Arc::new(eval_folder), split.val)?;
//! # Ok(()) }
//! ```

use std::sync::Arc;

use rand::seq::SliceRandom;

use crate::DataError;
use crate::sample::{ImageDataset, ImageSample};
use crate::seed::{rng_for, tag};
use crate::transform::Normalize;

/// The samples of `inner` at `indices`, in that order: sample `i` is `inner.get(indices[i])`.
#[derive(Clone)]
pub struct Subset {
    inner: Arc<dyn ImageDataset>,
    indices: Vec<usize>,
}

impl Subset {
    /// Errors with [`DataError::IndexOutOfRange`] if an index is not below `inner.len()`.
    pub fn new(inner: Arc<dyn ImageDataset>, indices: Vec<usize>) -> Result<Self, DataError> {
        let len = inner.len();
        if let Some(&index) = indices.iter().find(|&&i| i >= len) {
            return Err(DataError::IndexOutOfRange { index, len });
        }
        Ok(Subset { inner, indices })
    }

    /// Indices into the inner dataset.
    pub fn indices(&self) -> &[usize] {
        &self.indices
    }
}

impl ImageDataset for Subset {
    fn len(&self) -> usize {
        self.indices.len()
    }

    fn num_classes(&self) -> usize {
        self.inner.num_classes()
    }

    fn shape(&self) -> [usize; 3] {
        self.inner.shape()
    }

    fn normalize(&self) -> Normalize {
        self.inner.normalize()
    }

    fn get(&self, index: usize, rng_seed: u64) -> Result<Option<ImageSample>, DataError> {
        let inner_index = *self.indices.get(index).ok_or(DataError::IndexOutOfRange {
            index,
            len: self.len(),
        })?;
        self.inner.get(inner_index, rng_seed)
    }
}

/// Disjoint train/validation index lists covering every sample once, each sorted ascending.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SplitIndices {
    /// Indices kept for training.
    pub train: Vec<usize>,
    /// Indices held out for validation.
    pub val: Vec<usize>,
}

/// Holds out `round(n_c * val_fraction)` samples of each class `c` (at least one when
/// `val_fraction > 0` and the class has two or more samples; never all of a class), chosen
/// at random from `seed` alone. `labels[i]` is the class of sample `i`.
/// `val_fraction` must be in `[0, 1)`.
pub fn stratified_split(
    labels: &[usize],
    val_fraction: f64,
    seed: u64,
) -> Result<SplitIndices, DataError> {
    if !(0.0..1.0).contains(&val_fraction) {
        return Err(DataError::config(
            "val_fraction",
            val_fraction,
            "must be in [0, 1)",
        ));
    }
    let classes = labels.iter().max().map_or(0, |m| m + 1);
    let mut by_class = vec![Vec::new(); classes];
    for (i, &l) in labels.iter().enumerate() {
        by_class[l].push(i);
    }
    let (mut train, mut val) = (Vec::new(), Vec::new());
    for (c, mut members) in by_class.into_iter().enumerate() {
        let n = members.len();
        let mut n_val = (n as f64 * val_fraction).round() as usize;
        if val_fraction > 0.0 && n >= 2 {
            n_val = n_val.max(1);
        }
        n_val = n_val.min(n.saturating_sub(1));
        members.shuffle(&mut rng_for(&[seed, tag::SPLIT, c as u64]));
        val.extend_from_slice(&members[..n_val]);
        train.extend_from_slice(&members[n_val..]);
    }
    train.sort_unstable();
    val.sort_unstable();
    Ok(SplitIndices { train, val })
}
