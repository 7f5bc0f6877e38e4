//! ImageFolder: `root/<class>/<image>` trees, as torchvision's `datasets.ImageFolder`.
//!
//! Classes are the sorted names of the root's sub-folders (hidden ones, starting with `.`, are
//! ignored) and get indices `0..n` in that order. Each class folder's `.jpg`, `.jpeg` and
//! `.png` files (any case; sub-folders are not searched) are its samples, sorted by name.
//! Images are decoded from their content (not their extension) to RGB8 — grey, grey+alpha,
//! RGBA and 16-bit images are converted, alpha is dropped — or to 8-bit grey for 1 channel.

use std::collections::BTreeSet;
use std::io::Cursor;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::Mutex;

use image::{DynamicImage, GrayImage, ImageReader, RgbImage};

use crate::DataError;
use crate::sample::{ImageDataset, ImageSample};
use crate::transform::{ImageTransform, Normalize};

/// What to do with an image file that cannot be decoded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CorruptPolicy {
    /// Return [`DataError::Decode`] naming the file; the loader ends the epoch with it.
    #[default]
    Fail,
    /// Drop the sample (its batch comes out one shorter) and count it in
    /// [`ImageFolder::skipped`].
    Skip,
}

/// How an [`ImageFolder`] decodes and transforms its images.
#[derive(Clone, Debug, PartialEq)]
pub struct ImageFolderConfig {
    /// 3 (RGB) or 1 (grey); must equal `transform.normalize.channels()`.
    pub channels: usize,
    /// Resize, crop and normalisation.
    pub transform: ImageTransform,
    /// Corrupt-file policy.
    pub corrupt: CorruptPolicy,
}

impl ImageFolderConfig {
    /// RGB, a given transform, [`CorruptPolicy::Fail`].
    pub fn rgb(transform: ImageTransform) -> Self {
        ImageFolderConfig {
            channels: 3,
            transform,
            corrupt: CorruptPolicy::Fail,
        }
    }

    /// Checks channels (1 or 3, matching the normalisation) and the transform.
    pub fn validate(&self) -> Result<(), DataError> {
        if self.channels != 1 && self.channels != 3 {
            return Err(DataError::config(
                "channels",
                self.channels,
                "must be 1 or 3",
            ));
        }
        if self.transform.normalize.channels() != self.channels {
            return Err(DataError::config(
                "normalize",
                format!("{} channel(s)", self.transform.normalize.channels()),
                format!(
                    "must give one mean/std per image channel ({})",
                    self.channels
                ),
            ));
        }
        self.transform.validate()
    }
}

/// An image decoded to one of the layouts the transforms take.
#[derive(Clone, Debug, PartialEq)]
pub enum DecodedImage {
    /// 8-bit RGB, `[h, w, 3]`.
    Rgb(RgbImage),
    /// 8-bit grey, `[h, w, 1]`.
    Luma(GrayImage),
}

/// Reads and decodes `path` to 8-bit RGB (`channels == 3`) or grey (`channels == 1`).
/// A file that cannot be read gives [`DataError::Io`], one that cannot be decoded
/// [`DataError::Decode`]; both name the path.
pub fn decode_image(path: &Path, channels: usize) -> Result<DecodedImage, DataError> {
    let bytes = std::fs::read(path).map_err(|e| DataError::io(path, e))?;
    let decode_err = |source| DataError::Decode {
        path: path.to_path_buf(),
        source,
    };
    let reader = ImageReader::new(Cursor::new(bytes))
        .with_guessed_format()
        .map_err(|e| decode_err(image::ImageError::IoError(e)))?;
    let img: DynamicImage = reader.decode().map_err(decode_err)?;
    Ok(if channels == 1 {
        DecodedImage::Luma(img.to_luma8())
    } else {
        DecodedImage::Rgb(img.to_rgb8())
    })
}

/// Whether `path` has an image extension this dataset reads (jpg, jpeg, png; any case).
pub fn is_image_file(path: &Path) -> bool {
    path.extension().and_then(|e| e.to_str()).is_some_and(|e| {
        ["jpg", "jpeg", "png"]
            .iter()
            .any(|x| e.eq_ignore_ascii_case(x))
    })
}

/// The scanned file list of an image folder: class names and `(path, label)` pairs.
#[derive(Debug)]
struct Index {
    root: PathBuf,
    classes: Vec<String>,
    samples: Vec<(PathBuf, usize)>,
}

/// Sorted non-hidden entries of `dir` that satisfy `keep`.
fn sorted_entries(dir: &Path, keep: impl Fn(&Path) -> bool) -> Result<Vec<PathBuf>, DataError> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| DataError::io(dir, e))? {
        let path = entry.map_err(|e| DataError::io(dir, e))?.path();
        let hidden = path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with('.'));
        if !hidden && keep(&path) {
            out.push(path);
        }
    }
    out.sort();
    Ok(out)
}

fn scan(root: &Path) -> Result<Index, DataError> {
    if !root.is_dir() {
        return Err(DataError::MissingRoot {
            path: root.to_path_buf(),
        });
    }
    let class_dirs = sorted_entries(root, |p| p.is_dir())?;
    if class_dirs.is_empty() {
        return Err(DataError::NoClasses {
            path: root.to_path_buf(),
        });
    }
    let mut classes = Vec::with_capacity(class_dirs.len());
    let mut samples = Vec::new();
    for (label, dir) in class_dirs.iter().enumerate() {
        let files = sorted_entries(dir, |p| is_image_file(p) && p.is_file())?;
        if files.is_empty() {
            return Err(DataError::EmptyClass { path: dir.clone() });
        }
        classes.push(
            dir.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
        );
        samples.extend(files.into_iter().map(|f| (f, label)));
    }
    Ok(Index {
        root: root.to_path_buf(),
        classes,
        samples,
    })
}

/// An image classification dataset over a `root/<class>/<image>` tree.
///
/// Cloning or [`ImageFolder::with_config`] shares the file list and the set of skipped files.
#[derive(Clone, Debug)]
pub struct ImageFolder {
    index: Arc<Index>,
    config: ImageFolderConfig,
    /// Indices of the samples skipped as undecodable.
    skipped: Arc<Mutex<BTreeSet<usize>>>,
}

impl ImageFolder {
    /// Scans `root`. Errors: [`DataError::MissingRoot`], [`DataError::NoClasses`],
    /// [`DataError::EmptyClass`] (naming the folder), or an invalid `config`.
    pub fn open(root: impl AsRef<Path>, config: ImageFolderConfig) -> Result<Self, DataError> {
        config.validate()?;
        let index = Arc::new(scan(root.as_ref())?);
        Ok(ImageFolder {
            index,
            config,
            skipped: Arc::default(),
        })
    }

    /// A view of the same files with another config (e.g. the eval transform for a held-out
    /// split); shares the file list and the skip counter.
    pub fn with_config(&self, config: ImageFolderConfig) -> Result<Self, DataError> {
        config.validate()?;
        Ok(ImageFolder {
            index: self.index.clone(),
            config,
            skipped: self.skipped.clone(),
        })
    }

    /// The root folder.
    pub fn root(&self) -> &Path {
        &self.index.root
    }

    /// Class names (sub-folder names), index = label.
    pub fn classes(&self) -> &[String] {
        &self.index.classes
    }

    /// `(path, label)` of every sample, by class then file name.
    pub fn samples(&self) -> &[(PathBuf, usize)] {
        &self.index.samples
    }

    /// Label of every sample, in sample order.
    pub fn labels(&self) -> Vec<usize> {
        self.index.samples.iter().map(|(_, l)| *l).collect()
    }

    /// The config in use.
    pub fn config(&self) -> &ImageFolderConfig {
        &self.config
    }

    /// Files dropped as corrupt under [`CorruptPolicy::Skip`] so far, by this folder and every
    /// view sharing it: each file once, however many epochs read it.
    pub fn skipped(&self) -> u64 {
        self.skipped.lock().unwrap_or_else(|e| e.into_inner()).len() as u64
    }
}

impl ImageDataset for ImageFolder {
    fn len(&self) -> usize {
        self.index.samples.len()
    }

    fn num_classes(&self) -> usize {
        self.index.classes.len()
    }

    fn shape(&self) -> [usize; 3] {
        self.config.transform.output_shape(self.config.channels)
    }

    fn normalize(&self) -> Normalize {
        self.config.transform.normalize.clone()
    }

    /// Decodes and transforms sample `index`: `[channels, crop, crop]` u8.
    fn get(&self, index: usize, rng_seed: u64) -> Result<Option<ImageSample>, DataError> {
        let (path, label) = self
            .index
            .samples
            .get(index)
            .ok_or(DataError::IndexOutOfRange {
                index,
                len: self.len(),
            })?;
        let decoded = match decode_image(path, self.config.channels) {
            Ok(img) => img,
            Err(DataError::Decode { .. }) if self.config.corrupt == CorruptPolicy::Skip => {
                let mut skipped = self.skipped.lock().unwrap_or_else(|e| e.into_inner());
                skipped.insert(index);
                return Ok(None);
            }
            Err(e) => return Err(e),
        };
        let t = &self.config.transform;
        let pixels = match &decoded {
            DecodedImage::Rgb(img) => t.apply(img, rng_seed),
            DecodedImage::Luma(img) => t.apply(img, rng_seed),
        };
        Ok(Some(ImageSample {
            pixels,
            shape: self.shape(),
            label: *label,
        }))
    }
}
