//! The crate's one error type. Every message names the file, folder, key or value at fault.

use std::path::PathBuf;

/// Errors of dataset opening, decoding, tokenization, generation and loading.
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
    /// A data file that is not there (text data: fetched by `scripts/fetch_text_data.sh`).
    #[error("{} does not exist: run {fetch} to fetch it", .path.display())]
    MissingFile {
        /// The file expected.
        path: PathBuf,
        /// The command that puts it there.
        fetch: &'static str,
    },
    /// A file whose SHA-256 digest is not the published one.
    #[error("checksum mismatch for {}: expected sha256 {expected}, found {actual} (re-run {fetch} to fetch it again)", .path.display())]
    Checksum {
        /// The file.
        path: PathBuf,
        /// Expected digest, lowercase hex.
        expected: String,
        /// Digest of the file, lowercase hex.
        actual: String,
        /// The command that fetches the file.
        fetch: &'static str,
    },
    /// A JSON file that does not parse.
    #[error("cannot parse JSON file {}: {source}", .path.display())]
    Json {
        /// The file.
        path: PathBuf,
        /// The parser's error (with line and column).
        source: serde_json::Error,
    },
    /// A JSON file whose `key` does not hold the value required.
    #[error("{}: \"{key}\" is {found}, expected {expected}", .path.display())]
    JsonField {
        /// The file.
        path: PathBuf,
        /// The key.
        key: &'static str,
        /// The value found, as JSON (`null` when absent).
        found: String,
        /// The value required.
        expected: String,
    },
    /// A `tokenizer.json` that cannot be loaded or configured.
    #[error("cannot load tokenizer {}: {message}", .path.display())]
    Tokenizer {
        /// The `tokenizer.json` file.
        path: PathBuf,
        /// What failed.
        message: String,
    },
    /// A text that the tokenizer cannot encode.
    #[error("cannot tokenize {text:?}: {message}")]
    Tokenize {
        /// The text (its first 80 characters).
        text: String,
        /// The tokenizer's error.
        message: String,
    },
    /// A CSV file that cannot be read (bad quoting, bad UTF-8, unequal field counts...).
    #[error("cannot read CSV {}: {source}", .path.display())]
    Csv {
        /// The file.
        path: PathBuf,
        /// The reader's error (with line and record).
        source: csv::Error,
    },
    /// A row of a text data file that cannot be used.
    #[error("{}, line {line}: {reason}", .path.display())]
    BadRow {
        /// The file.
        path: PathBuf,
        /// 1-based line number (for CSV: the line where the record starts).
        line: u64,
        /// What is wrong, naming the value at fault.
        reason: String,
    },
    /// A tokenized sample longer than the packed row capacity.
    #[error("sample {index} has {len} tokens, more than the packing row length {max_len}")]
    SampleTooLong {
        /// Position of the sample in the batch or dataset.
        index: usize,
        /// Its length in tokens.
        len: usize,
        /// Tokens per packed row.
        max_len: usize,
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
