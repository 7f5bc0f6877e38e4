//! The crate's one error type. Every message names the file, folder or value at fault.

use std::path::PathBuf;

/// Errors of dataset opening, decoding, generation and loading.
#[derive(Debug, thiserror::Error)]
pub enum DataError {
    /// Reading, writing or listing `path` failed.
    #[error("I/O error on {}: {source}", .path.display())]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// An image folder root that does not exist or is not a folder.
    #[error("image folder root {} does not exist or is not a directory", .path.display())]
    MissingRoot {
        /// The root given.
        path: PathBuf,
    },
    /// An image folder root without class sub-folders.
    #[error("image folder {} has no class sub-folders (expected root/<class>/<image>)", .path.display())]
    NoClasses {
        /// The root.
        path: PathBuf,
    },
    /// A class folder without any `.jpg`, `.jpeg` or `.png` file.
    #[error("class folder {} has no .jpg/.jpeg/.png files", .path.display())]
    EmptyClass {
        /// The class folder.
        path: PathBuf,
    },
    /// An image file that cannot be decoded (corrupt, truncated or an unsupported format).
    #[error("cannot decode image {}: {source}", .path.display())]
    Decode {
        /// The image file.
        path: PathBuf,
        /// The decoder's error.
        source: image::ImageError,
    },
    /// An image that cannot be encoded (mock data generation).
    #[error("cannot encode image {}: {source}", .path.display())]
    Encode {
        /// The image file being written.
        path: PathBuf,
        /// The encoder's error.
        source: image::ImageError,
    },
    /// An IDX file whose magic number is not the one expected.
    #[error("{} is not an IDX {kind} file: magic {found}, expected {expected}", .path.display())]
    IdxMagic {
        /// The IDX file.
        path: PathBuf,
        /// `"images"` or `"labels"`.
        kind: &'static str,
        /// Magic number read.
        found: u32,
        /// Magic number expected (2051 images, 2049 labels).
        expected: u32,
    },
    /// An IDX file shorter or longer than its header says.
    #[error("IDX file {} holds {found} bytes after decompression, its header implies {expected}", .path.display())]
    IdxSize {
        /// The IDX file.
        path: PathBuf,
        /// Bytes implied by the header (header included).
        expected: u64,
        /// Bytes present.
        found: u64,
    },
    /// An IDX file with a different item count than required.
    #[error("IDX file {} holds {found} items, expected {expected}", .path.display())]
    IdxCount {
        /// The IDX file.
        path: PathBuf,
        /// Items in the file.
        found: usize,
        /// Items required.
        expected: usize,
    },
    /// An image file and a label file whose counts differ.
    #[error("{} holds {images} images but {} holds {labels} labels", .images_path.display(), .labels_path.display())]
    IdxMismatch {
        /// The images file.
        images_path: PathBuf,
        /// Its image count.
        images: usize,
        /// The labels file.
        labels_path: PathBuf,
        /// Its label count.
        labels: usize,
    },
    /// A label outside `0..classes`.
    #[error("label {value} at index {index} of {} is out of range 0..{classes}", .path.display())]
    IdxLabel {
        /// The labels file.
        path: PathBuf,
        /// Position of the label.
        index: usize,
        /// The label read.
        value: u8,
        /// Number of classes.
        classes: usize,
    },
    /// A configuration value that cannot work.
    #[error("invalid {key} = {value}: {reason}")]
    InvalidConfig {
        /// The setting.
        key: &'static str,
        /// Its value, as written.
        value: String,
        /// What is required.
        reason: String,
    },
    /// A sample index past the end of a dataset.
    #[error("sample index {index} is out of range for a dataset of {len} samples")]
    IndexOutOfRange {
        /// The index asked for.
        index: usize,
        /// The dataset's length.
        len: usize,
    },
    /// A sample whose shape differs from the dataset's declared shape.
    #[error("sample {index} has shape {found:?}, the dataset declares {expected:?}")]
    ShapeMismatch {
        /// The dataset index.
        index: usize,
        /// Declared `[channels, height, width]`.
        expected: [usize; 3],
        /// Shape of the sample.
        found: [usize; 3],
    },
    /// A folder that the mock generator would have to replace but did not create.
    #[error("refusing to replace {}: it exists and is not a mock ImageNet tree (no manifest)", .path.display())]
    NotAMockTree {
        /// The folder.
        path: PathBuf,
    },
    /// A loader worker thread panicked while building a batch.
    #[error("loader worker panicked while building batch {batch}")]
    WorkerPanicked {
        /// The batch index.
        batch: usize,
    },
}

impl DataError {
    /// Wraps an I/O error with the path it concerns.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        DataError::Io {
            path: path.into(),
            source,
        }
    }

    /// An [`DataError::InvalidConfig`] for `key = value`.
    pub fn config(
        key: &'static str,
        value: impl std::fmt::Display,
        reason: impl Into<String>,
    ) -> Self {
        DataError::InvalidConfig {
            key,
            value: value.to_string(),
            reason: reason.into(),
        }
    }
}
