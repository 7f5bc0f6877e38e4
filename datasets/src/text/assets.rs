//! Where the text data lives, and opening it with its checksums verified.
//!
//! Layout of [`text_data_dir`] (written by `scripts/fetch_text_data.sh`):
//!
//! | folder | files |
//! | --- | --- |
//! | [`MINILM_DIR`] | `vocab.txt`, `tokenizer.json`, `model.safetensors`, `config.json` |
//! | [`ROTTEN_TOMATOES_DIR`] | `rotten_tomatoes_corpus.csv.bz2`, `rotten_tomatoes_corpus_full.csv.bz2` |
//!
//! The checkpoint is all-MiniLM-L6-v2 (a 6-layer, 384-wide BERT with the 30522-token
//! bert-base-uncased vocabulary); its weights are F32 safetensors with Hugging Face
//! `BertModel` keys (no `bert.` prefix).

use std::path::{Path, PathBuf};

use crate::DataError;
use crate::text::checksum::{FETCH_TEXT_DATA, verify_sha256};

/// Sub-folder of the MiniLM checkpoint files.
pub const MINILM_DIR: &str = "all-minilm-l6-v2";
/// Sub-folder of the Rotten Tomatoes corpus files.
pub const ROTTEN_TOMATOES_DIR: &str = "rotten-tomatoes";

/// SHA-256 of `vocab.txt` (30522 WordPiece tokens, one per line).
pub const MINILM_VOCAB_SHA256: &str =
    "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3";
/// SHA-256 of `tokenizer.json`.
pub const MINILM_TOKENIZER_SHA256: &str =
    "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037";
/// SHA-256 of `model.safetensors` (90.9 MB).
pub const MINILM_WEIGHTS_SHA256: &str =
    "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db";
/// Hidden size that `config.json` must declare (it has no published checksum).
pub const MINILM_HIDDEN_SIZE: u64 = 384;

/// File name of the Rotten Tomatoes snippets (2455 fresh, 2411 rotten, 156 plot rows).
pub const ROTTEN_TOMATOES_FILE: &str = "rotten_tomatoes_corpus.csv.bz2";
/// File name of the full Rotten Tomatoes corpus (7403 fresh, 5405 rotten).
pub const ROTTEN_TOMATOES_FULL_FILE: &str = "rotten_tomatoes_corpus_full.csv.bz2";
/// SHA-256 of [`ROTTEN_TOMATOES_FILE`].
pub const ROTTEN_TOMATOES_SHA256: &str =
    "dddf2e4fea4376cf387c9f15f61edb61ff9688d57690826cddb8bf3c06e1061f";
/// SHA-256 of [`ROTTEN_TOMATOES_FULL_FILE`].
pub const ROTTEN_TOMATOES_FULL_SHA256: &str =
    "26b56d24d5a04cbed72d2a8c9a3fa47ebf62229f8c1cd8c9c3544c4ef12dd3f5";

/// Default folder of the text data: `$BURNACC_DATA/text`, else `~/.cache/burnacc/text`.
pub fn text_data_dir() -> PathBuf {
    crate::paths::data_dir().join("text")
}

/// Paths of the MiniLM checkpoint files.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MiniLmFiles {
    /// `vocab.txt`: one WordPiece token per line, line `i` (0-based) is token id `i`.
    pub vocab: PathBuf,
    /// `tokenizer.json`: the Hugging Face tokenizer (see [`crate::text::TextTokenizer`]).
    pub tokenizer: PathBuf,
    /// `model.safetensors`: F32 weights, Hugging Face `BertModel` keys.
    pub weights: PathBuf,
    /// `config.json`: the Hugging Face `BertConfig`.
    pub config: PathBuf,
}

impl MiniLmFiles {
    /// The paths under `dir/`[`MINILM_DIR`], `dir` being a text data folder such as
    /// [`text_data_dir`]. Nothing is checked.
    pub fn at(dir: &Path) -> Self {
        let d = dir.join(MINILM_DIR);
        MiniLmFiles {
            vocab: d.join("vocab.txt"),
            tokenizer: d.join("tokenizer.json"),
            weights: d.join("model.safetensors"),
            config: d.join("config.json"),
        }
    }

    /// The files under `dir` (see [`MiniLmFiles::at`]), verified: SHA-256 of the vocabulary,
    /// tokenizer and weights, and `config.json` parsing with `"hidden_size": 384`. Errors name
    /// the file; a missing one says to run `scripts/fetch_text_data.sh`. Hashing the weights
    /// reads 91 MB.
    pub fn open(dir: &Path) -> Result<Self, DataError> {
        let files = Self::at(dir);
        verify_sha256(&files.vocab, MINILM_VOCAB_SHA256)?;
        verify_sha256(&files.tokenizer, MINILM_TOKENIZER_SHA256)?;
        verify_sha256(&files.weights, MINILM_WEIGHTS_SHA256)?;
        check_config(&files.config)?;
        Ok(files)
    }
}

/// Checks that `path` is a JSON object with `"hidden_size": 384`.
fn check_config(path: &Path) -> Result<(), DataError> {
    let text = std::fs::read_to_string(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => DataError::MissingFile {
            path: path.into(),
            fetch: FETCH_TEXT_DATA,
        },
        _ => DataError::io(path, e),
    })?;
    let json: serde_json::Value =
        serde_json::from_str(&text).map_err(|source| DataError::Json {
            path: path.into(),
            source,
        })?;
    let found = json.get("hidden_size");
    if found.and_then(serde_json::Value::as_u64) != Some(MINILM_HIDDEN_SIZE) {
        return Err(DataError::JsonField {
            path: path.into(),
            key: "hidden_size",
            found: found.map_or_else(|| "null".into(), ToString::to_string),
            expected: MINILM_HIDDEN_SIZE.to_string(),
        });
    }
    Ok(())
}

/// Whether the four MiniLM files exist under `dir` (cheap: contents are checked by
/// [`MiniLmFiles::open`]). Tests use it to skip when the data has not been fetched.
pub fn minilm_present(dir: &Path) -> bool {
    let f = MiniLmFiles::at(dir);
    [&f.vocab, &f.tokenizer, &f.weights, &f.config]
        .iter()
        .all(|p| p.is_file())
}

/// Path of a Rotten Tomatoes corpus file under `dir/`[`ROTTEN_TOMATOES_DIR`]: the snippets
/// ([`ROTTEN_TOMATOES_FILE`]) or, with `full`, the full corpus; not checked.
pub fn rotten_tomatoes_path(dir: &Path, full: bool) -> PathBuf {
    let name = if full {
        ROTTEN_TOMATOES_FULL_FILE
    } else {
        ROTTEN_TOMATOES_FILE
    };
    dir.join(ROTTEN_TOMATOES_DIR).join(name)
}

/// [`rotten_tomatoes_path`], after verifying the file's SHA-256. Errors name the file; a
/// missing one says to run `scripts/fetch_text_data.sh`.
pub fn rotten_tomatoes_file(dir: &Path, full: bool) -> Result<PathBuf, DataError> {
    let path = rotten_tomatoes_path(dir, full);
    let expected = if full {
        ROTTEN_TOMATOES_FULL_SHA256
    } else {
        ROTTEN_TOMATOES_SHA256
    };
    verify_sha256(&path, expected)?;
    Ok(path)
}

/// Whether both Rotten Tomatoes files exist under `dir` (cheap: contents are checked by
/// [`rotten_tomatoes_file`]).
pub fn rotten_tomatoes_present(dir: &Path) -> bool {
    rotten_tomatoes_path(dir, false).is_file() && rotten_tomatoes_path(dir, true).is_file()
}

/// For tests that need fetched text data (`present`: e.g. [`minilm_present`]): `true` when it
/// is there. When it is not, under CI (the `CI` variable set) this panics naming `what`, `dir`
/// and the fetch command, because a missing download must not pass as a skipped test;
/// elsewhere it prints that the test is skipped and why, and returns `false`.
pub fn fetched_or_skip(present: bool, what: &str, dir: &Path) -> bool {
    if present {
        return true;
    }
    let message = format!(
        "{what} not in {} (run {})",
        dir.display(),
        super::checksum::FETCH_TEXT_DATA
    );
    if std::env::var_os("CI").is_some() {
        panic!("{message}: CI must fetch it");
    }
    eprintln!("skipped: {message}");
    false
}
