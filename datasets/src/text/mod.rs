//! Host-side text pipeline for BERT sequence classification.
//!
//! 1. [`MiniLmFiles::open`] and [`rotten_tomatoes_file`] locate the fetched data in
//!    [`text_data_dir`] and verify it ([`verify_sha256`]).
//! 2. [`read_rotten_tomatoes`] / [`read_sst2_tsv`] give [`TextExample`]s (text + label);
//!    [`train_val_split`] holds out a fixed, stratified validation set.
//! 3. [`TextTokenizer`] encodes each text into `[CLS] … [SEP]` WordPiece ids, truncated to
//!    `max_length`, unpadded; [`tokenize_all`] does a whole list.
//! 4. [`TextLoader`] serves epochs of [`TextBatch`]es: [`pad_batch`] (one sample per row,
//!    padded to the batch's longest) or [`pack_batch`] (several samples per row, each in its
//!    own attention segment), all vectors `[rows * seq_len]` i64 plus per-sample `cls_index`
//!    and `labels`.
//!
//! ```no_run
//! # use burnacc_datasets::text::*;
//! # fn main() -> Result<(), burnacc_datasets::DataError> {
//! let dir = text_data_dir();
//! let tokenizer = TextTokenizer::from_file(&MiniLmFiles::open(&dir)?.tokenizer, 128)?;
//! let examples = read_rotten_tomatoes(&rotten_tomatoes_file(&dir, false)?)?;
//! let (train, _val) = train_val_split(&examples, 0.1, 42)?;
//! let TokenizedSet { ids, labels, .. } = tokenize_all(&tokenizer, &train)?;
//! let config = TextLoaderConfig { packing: Some(128), ..TextLoaderConfig::default() };
//! let loader = TextLoader::new(ids, labels, config)?;
//! for batch in loader.epoch(0) {
//!     let batch = batch?;
//!     assert_eq!(batch.input_ids.len(), batch.rows * batch.seq_len);
//! }
//! # Ok(()) }
//! ```

mod assets;
mod batch;
mod checksum;
mod dataset;
mod examples;
mod loader;
mod tokenizer;

pub use assets::{
    MINILM_DIR, MINILM_HIDDEN_SIZE, MINILM_TOKENIZER_SHA256, MINILM_VOCAB_SHA256,
    MINILM_WEIGHTS_SHA256, MiniLmFiles, ROTTEN_TOMATOES_DIR, ROTTEN_TOMATOES_FILE,
    ROTTEN_TOMATOES_FULL_FILE, ROTTEN_TOMATOES_FULL_SHA256, ROTTEN_TOMATOES_SHA256,
    fetched_or_skip, minilm_present, rotten_tomatoes_file, rotten_tomatoes_path,
    rotten_tomatoes_present, text_data_dir,
};
pub use batch::{TextBatch, pack_batch, pad_batch};
pub use checksum::{FETCH_TEXT_DATA, sha256_file, verify_sha256};
pub use dataset::{TokenizedSet, tokenize_all};
pub use examples::{
    SENTIMENT_CLASSES, TextExample, read_rotten_tomatoes, read_sst2_tsv, train_val_split,
};
pub use loader::{TextEpoch, TextLoader, TextLoaderConfig};
pub use tokenizer::{PAD_ID, TextTokenizer};
