//! BERT WordPiece tokenization from a Hugging Face `tokenizer.json`.

use std::path::{Path, PathBuf};

use tokenizers::{Tokenizer, TruncationDirection, TruncationParams, TruncationStrategy};

use crate::DataError;

/// Id of `[PAD]` that [`crate::text::TextBatch`] pads with; [`TextTokenizer::from_file`]
/// checks that the vocabulary agrees.
pub const PAD_ID: u32 = 0;

/// A `tokenizer.json` tokenizer that encodes one text into `[CLS] tokens… [SEP]` ids, at most
/// `max_length` of them, without padding (batches are padded or packed later, per batch).
#[derive(Clone)]
pub struct TextTokenizer {
    inner: Tokenizer,
    path: PathBuf,
    max_length: usize,
    cls_id: u32,
    sep_id: u32,
}

impl std::fmt::Debug for TextTokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TextTokenizer")
            .field("path", &self.path)
            .field("max_length", &self.max_length)
            .field("vocab_size", &self.vocab_size())
            .finish()
    }
}

/// The id of `token`, or an error naming the tokenizer file and the token.
fn special_id(inner: &Tokenizer, path: &Path, token: &str) -> Result<u32, DataError> {
    inner
        .token_to_id(token)
        .ok_or_else(|| DataError::Tokenizer {
            path: path.into(),
            message: format!("the vocabulary has no {token} token"),
        })
}

impl TextTokenizer {
    /// Loads `tokenizer_json` and replaces its own padding and truncation settings: no padding,
    /// and longest-first truncation (from the right) to `max_length` ids, `[CLS]` and `[SEP]`
    /// included. `max_length` must be at least 3. Errors name the file; the vocabulary must
    /// have `[CLS]`, `[SEP]` and `[PAD]`, with `[PAD]` = [`PAD_ID`].
    pub fn from_file(tokenizer_json: &Path, max_length: usize) -> Result<Self, DataError> {
        if max_length < 3 {
            return Err(DataError::config(
                "max_length",
                max_length,
                "must be at least 3 ([CLS], one token, [SEP])",
            ));
        }
        if !tokenizer_json.is_file() {
            return Err(DataError::MissingFile {
                path: tokenizer_json.into(),
                fetch: crate::text::FETCH_TEXT_DATA,
            });
        }
        let path = tokenizer_json.to_path_buf();
        let tokenizer_error = |message: String| DataError::Tokenizer {
            path: path.clone(),
            message,
        };
        let mut inner =
            Tokenizer::from_file(tokenizer_json).map_err(|e| tokenizer_error(e.to_string()))?;
        inner.with_padding(None);
        inner
            .with_truncation(Some(TruncationParams {
                direction: TruncationDirection::Right,
                max_length,
                strategy: TruncationStrategy::LongestFirst,
                stride: 0,
            }))
            .map_err(|e| tokenizer_error(format!("max_length = {max_length}: {e}")))?;
        let cls_id = special_id(&inner, &path, "[CLS]")?;
        let sep_id = special_id(&inner, &path, "[SEP]")?;
        let pad_id = special_id(&inner, &path, "[PAD]")?;
        if pad_id != PAD_ID {
            return Err(tokenizer_error(format!(
                "[PAD] has id {pad_id}; text batches pad with id {PAD_ID}"
            )));
        }
        Ok(TextTokenizer {
            inner,
            path,
            max_length,
            cls_id,
            sep_id,
        })
    }

    /// Token ids of `text`: `[CLS]`, its WordPiece tokens (lower-cased, accents stripped, for
    /// an uncased BERT vocabulary), `[SEP]`; between 2 and `max_length` ids.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, DataError> {
        self.encode_reporting_truncation(text).map(|(ids, _)| ids)
    }

    /// [`TextTokenizer::encode`], and whether `text` had more tokens than fit in `max_length`
    /// (the tokenizer keeps what truncation cut as overflow).
    pub fn encode_reporting_truncation(&self, text: &str) -> Result<(Vec<u32>, bool), DataError> {
        let encoding = self
            .inner
            .encode_fast(text, true)
            .map_err(|e| DataError::Tokenize {
                text: text.chars().take(80).collect(),
                message: e.to_string(),
            })?;
        Ok((
            encoding.get_ids().to_vec(),
            !encoding.get_overflowing().is_empty(),
        ))
    }

    /// Maximum number of ids that [`TextTokenizer::encode`] returns.
    pub fn max_length(&self) -> usize {
        self.max_length
    }

    /// Id of `[PAD]` (always [`PAD_ID`]).
    pub fn pad_id(&self) -> u32 {
        PAD_ID
    }

    /// Id of `[CLS]`, the first id of every encoding (101 for BERT).
    pub fn cls_id(&self) -> u32 {
        self.cls_id
    }

    /// Id of `[SEP]`, the last id of every encoding (102 for BERT).
    pub fn sep_id(&self) -> u32 {
        self.sep_id
    }

    /// Number of ids, added tokens included (30522 for BERT); every id is below it.
    pub fn vocab_size(&self) -> usize {
        self.inner.get_vocab_size(true)
    }

    /// Id of `token`, if it is in the vocabulary.
    pub fn token_to_id(&self, token: &str) -> Option<u32> {
        self.inner.token_to_id(token)
    }

    /// The `tokenizer.json` file loaded.
    pub fn path(&self) -> &Path {
        &self.path
    }
}
