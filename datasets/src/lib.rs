//! Datasets and loaders (host side: no tensors, no backend).
//!
//! Datasets implement [`ImageDataset`] and produce `[channels, height, width]` u8 samples and
//! their [`Normalize`]; a [`Loader`] batches them on worker threads into [`HostBatch`]es
//! (`[batch, channels, height, width]` u8 + i64 labels) that the trainer uploads and
//! normalises on the device. The image and text loaders share one engine of ordered worker
//! threads with bounded read-ahead.
//!
//! - [`ImageFolder`]: `root/<class>/<image>` trees of JPEG/PNG files, with [`ImageTransform`].
//! - [`generate_mock_imagenet`]: a learnable, generated ImageFolder tree of JPEGs.
//! - [`FashionMnist`]: the IDX files fetched by `scripts/fetch_fashion_mnist.sh`.
//! - [`Subset`] and [`stratified_split`]: hold-out validation splits.
//!
//! Text ([`text`]), for BERT sequence classification: a [`TextTokenizer`] (Hugging Face
//! `tokenizer.json`), readers of the Rotten Tomatoes corpus and SST-2 style TSV files, and a
//! [`TextLoader`] of [`TextBatch`]es (`[rows * seq_len]` i64 token ids, positions and
//! attention segments, padded per batch or sequence-packed, with per-sample `cls_index` and
//! `labels`). The data is fetched by `scripts/fetch_text_data.sh` and checked by SHA-256.

mod error;
mod fashion_mnist;
pub mod idx;
mod image_folder;
mod loader;
mod mock_imagenet;
mod ordered;
pub mod paths;
mod sample;
pub mod seed;
mod shard;
mod subset;
pub mod text;
pub mod transform;

pub use error::DataError;
pub use fashion_mnist::{
    AUGMENT_PADDING, FASHION_MNIST_CLASSES, FASHION_MNIST_MEAN, FASHION_MNIST_STD, FashionMnist,
    FashionMnistConfig, FashionMnistSplit, fashion_mnist_dir, fashion_mnist_present,
};
pub use image_folder::{
    CorruptPolicy, DecodedImage, ImageFolder, ImageFolderConfig, decode_image, is_image_file,
};
pub use loader::{Epoch, Loader, LoaderConfig};
pub use mock_imagenet::{
    MANIFEST_FILE, MockOutcome, MockSpec, default_mock_dir, generate_mock_imagenet,
    is_complete_mock_tree, mock_class_name, mock_file_name, render_mock_image,
};
pub use sample::{HostBatch, ImageDataset, ImageSample};
pub use shard::Shard;
pub use subset::{SplitIndices, Subset, stratified_split};
pub use text::{
    MiniLmFiles, TextBatch, TextExample, TextLoader, TextLoaderConfig, TextTokenizer, TokenizedSet,
    minilm_present, pack_batch, pad_batch, read_rotten_tomatoes, read_sst2_tsv,
    rotten_tomatoes_file, rotten_tomatoes_present, text_data_dir, tokenize_all, train_val_split,
    verify_sha256,
};
pub use transform::{ImageTransform, Normalize, TransformMode};
