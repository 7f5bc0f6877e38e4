//! Fashion-MNIST (Xiao, Rasul & Vollgraf 2017, arXiv:1708.07747): 70k 28×28 grey images of
//! 10 clothing classes, in MNIST's IDX format (see [`crate::idx`]).
//!
//! Files, in [`fashion_mnist_dir`] (put there by `scripts/fetch_fashion_mnist.sh`):
//! `{train,t10k}-images-idx3-ubyte.gz` and `{train,t10k}-labels-idx1-ubyte.gz`.
//! Samples are `[1, 28, 28]` (or `[1, 32, 32]`, zero-padded by 2 on each side), normalised
//! with the training set's statistics (mean 0.2860, std 0.3530): values in about `[-0.81, 2.02]`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use image::GrayImage;
use image::imageops;

use crate::DataError;
use crate::idx::{read_idx_images, read_idx_labels};
use crate::sample::{ImageDataset, ImageSample};
use crate::seed::rng_for;
use crate::transform::{Normalize, random_crop_flip};

/// Mean pixel value of the Fashion-MNIST training set, in `[0, 1]` units.
pub const FASHION_MNIST_MEAN: f32 = 0.2860;
/// Standard deviation of the Fashion-MNIST training pixels, in `[0, 1]` units.
pub const FASHION_MNIST_STD: f32 = 0.3530;
/// Class names, index = label.
pub const FASHION_MNIST_CLASSES: [&str; 10] = [
    "T-shirt/top",
    "Trouser",
    "Pullover",
    "Dress",
    "Coat",
    "Sandal",
    "Shirt",
    "Sneaker",
    "Bag",
    "Ankle boot",
];
/// Padding (pixels, each side) of the training augmentation's random crop.
pub const AUGMENT_PADDING: u32 = 2;

/// The two official splits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FashionMnistSplit {
    /// 60 000 training images.
    Train,
    /// 10 000 test images.
    Test,
}

impl FashionMnistSplit {
    /// File name prefix: `train` or `t10k`.
    pub fn file_prefix(self) -> &'static str {
        match self {
            FashionMnistSplit::Train => "train",
            FashionMnistSplit::Test => "t10k",
        }
    }

    /// Number of samples: 60 000 or 10 000.
    pub fn num_samples(self) -> usize {
        match self {
            FashionMnistSplit::Train => 60_000,
            FashionMnistSplit::Test => 10_000,
        }
    }

    /// Paths of `(images, labels)` in `dir`.
    pub fn files(self, dir: &Path) -> (PathBuf, PathBuf) {
        let p = self.file_prefix();
        (
            dir.join(format!("{p}-images-idx3-ubyte.gz")),
            dir.join(format!("{p}-labels-idx1-ubyte.gz")),
        )
    }
}

/// Default folder of the Fashion-MNIST files: `$BURNACC_DATA/fashion-mnist`, else
/// `~/.cache/burnacc/fashion-mnist`.
pub fn fashion_mnist_dir() -> PathBuf {
    crate::paths::data_dir().join("fashion-mnist")
}

/// Whether all four Fashion-MNIST files exist in `dir` (their contents are checked on open).
pub fn fashion_mnist_present(dir: &Path) -> bool {
    [FashionMnistSplit::Train, FashionMnistSplit::Test]
        .iter()
        .all(|s| {
            let (images, labels) = s.files(dir);
            images.is_file() && labels.is_file()
        })
}

/// Output size and augmentation of [`FashionMnist`] samples.
#[derive(Clone, Debug, PartialEq)]
pub struct FashionMnistConfig {
    /// Zero-pad 28×28 to 32×32 (2 pixels each side), e.g. for ResNet-style strides.
    pub pad_to_32: bool,
    /// Training augmentation: zero-pad by [`AUGMENT_PADDING`], random crop back to size,
    /// random horizontal flip.
    pub augment: bool,
    /// One-channel normalisation; defaults to mean 0.2860, std 0.3530.
    pub normalize: Normalize,
}

impl Default for FashionMnistConfig {
    /// 28×28, no augmentation, Fashion-MNIST statistics.
    fn default() -> Self {
        let normalize = Normalize::new(&[FASHION_MNIST_MEAN], &[FASHION_MNIST_STD])
            .expect("Fashion-MNIST statistics are a valid normalisation");
        FashionMnistConfig {
            pad_to_32: false,
            augment: false,
            normalize,
        }
    }
}

impl FashionMnistConfig {
    /// The default with training augmentation on.
    pub fn train() -> Self {
        FashionMnistConfig {
            augment: true,
            ..Self::default()
        }
    }
}

/// A Fashion-MNIST split held in memory (about 47 MB for the training split).
#[derive(Clone, Debug)]
pub struct FashionMnist {
    pixels: Arc<Vec<u8>>,
    labels: Arc<Vec<u8>>,
    rows: usize,
    cols: usize,
    config: FashionMnistConfig,
}

impl FashionMnist {
    /// Loads `split` from `dir` (see [`fashion_mnist_dir`]); checks magic numbers, sizes and
    /// the split's official count. Errors name the file.
    pub fn open(
        dir: &Path,
        split: FashionMnistSplit,
        config: FashionMnistConfig,
    ) -> Result<Self, DataError> {
        let (images, labels) = split.files(dir);
        Self::from_idx_files(&images, &labels, Some(split.num_samples()), config)
    }

    /// Loads any pair of IDX files (plain or gz); `expected_count`, when given, must equal the
    /// number of images. Labels must number as many as images and lie in `0..10`.
    pub fn from_idx_files(
        images_path: &Path,
        labels_path: &Path,
        expected_count: Option<usize>,
        config: FashionMnistConfig,
    ) -> Result<Self, DataError> {
        if config.normalize.channels() != 1 {
            return Err(DataError::config(
                "normalize",
                format!("{} channels", config.normalize.channels()),
                "Fashion-MNIST has one channel: give one mean and one std",
            ));
        }
        let images = read_idx_images(images_path)?;
        if let Some(expected) = expected_count.filter(|&e| e != images.count) {
            return Err(DataError::IdxCount {
                path: images_path.into(),
                found: images.count,
                expected,
            });
        }
        let labels = read_idx_labels(labels_path)?;
        if labels.len() != images.count {
            return Err(DataError::IdxMismatch {
                images_path: images_path.into(),
                images: images.count,
                labels_path: labels_path.into(),
                labels: labels.len(),
            });
        }
        let classes = FASHION_MNIST_CLASSES.len();
        if let Some((index, &value)) = labels
            .iter()
            .enumerate()
            .find(|(_, l)| usize::from(**l) >= classes)
        {
            return Err(DataError::IdxLabel {
                path: labels_path.into(),
                index,
                value,
                classes,
            });
        }
        Ok(FashionMnist {
            pixels: Arc::new(images.pixels),
            labels: Arc::new(labels),
            rows: images.rows,
            cols: images.cols,
            config,
        })
    }

    /// The same data with another config (e.g. without augmentation); shares the memory.
    pub fn with_config(&self, config: FashionMnistConfig) -> Self {
        FashionMnist {
            config,
            ..self.clone()
        }
    }

    /// Labels of all samples, in order.
    pub fn labels(&self) -> &[u8] {
        &self.labels
    }

    /// The raw `[rows, cols]` u8 image of sample `index`.
    pub fn raw_image(&self, index: usize) -> Option<&[u8]> {
        let n = self.rows * self.cols;
        self.pixels.get(index * n..(index + 1) * n)
    }

    fn side_padding(&self) -> u32 {
        if self.config.pad_to_32 { 2 } else { 0 }
    }
}

/// img zero-padded by `pad` pixels on every side.
fn pad(img: &GrayImage, pad: u32) -> GrayImage {
    if pad == 0 {
        return img.clone();
    }
    let mut out = GrayImage::new(img.width() + 2 * pad, img.height() + 2 * pad);
    imageops::replace(&mut out, img, i64::from(pad), i64::from(pad));
    out
}

impl ImageDataset for FashionMnist {
    fn len(&self) -> usize {
        self.labels.len()
    }

    fn num_classes(&self) -> usize {
        FASHION_MNIST_CLASSES.len()
    }

    fn shape(&self) -> [usize; 3] {
        let p = 2 * self.side_padding() as usize;
        [1, self.rows + p, self.cols + p]
    }

    fn normalize(&self) -> Normalize {
        self.config.normalize.clone()
    }

    /// `[1, 28, 28]` or `[1, 32, 32]` u8; never `None`.
    fn get(&self, index: usize, rng_seed: u64) -> Result<Option<ImageSample>, DataError> {
        let raw = self.raw_image(index).ok_or(DataError::IndexOutOfRange {
            index,
            len: self.len(),
        })?;
        let img = GrayImage::from_raw(self.cols as u32, self.rows as u32, raw.to_vec())
            .expect("IDX image slice has rows * cols bytes");
        let mut img = pad(&img, self.side_padding());
        if self.config.augment {
            let (w, h) = img.dimensions();
            img = random_crop_flip(&pad(&img, AUGMENT_PADDING), w, h, &mut rng_for(&[rng_seed]));
        }
        Ok(Some(ImageSample {
            pixels: img.into_raw(),
            shape: self.shape(),
            label: usize::from(self.labels[index]),
        }))
    }
}
