//! Where a text recipe's files are: the corpus, the tokenizer and the starting weights, from
//! the recipe's keys or the defaults that `scripts/fetch_text_data.sh` fills.

use super::{DatasetKind, ModelName, Recipe};
use burnacc_datasets::text::{
    MINILM_DIR, ROTTEN_TOMATOES_DIR, ROTTEN_TOMATOES_FILE, text_data_dir,
};
use std::path::PathBuf;

/// The files a text recipe reads.
#[derive(Clone, Debug)]
pub struct TextPaths {
    /// The training corpus (`data.path`).
    pub corpus: PathBuf,
    /// True when `corpus` is the default (fetched) file.
    pub corpus_is_default: bool,
    /// `tokenizer.json`.
    pub tokenizer: PathBuf,
    /// Weights to start from, if any (`model.weights`, or the default for `pretrained`).
    pub weights: Option<PathBuf>,
}

impl TextPaths {
    /// Resolves `r`'s text files. The recipe must be a text recipe.
    pub fn of(r: &Recipe) -> Self {
        let text = text_data_dir();
        let minilm = text.join(MINILM_DIR);
        let (corpus, corpus_is_default) = match (&r.data.path, r.data.dataset) {
            (Some(path), _) => (path.clone(), false),
            (None, DatasetKind::RottenTomatoes) => (
                text.join(ROTTEN_TOMATOES_DIR).join(ROTTEN_TOMATOES_FILE),
                true,
            ),
            // validate() demands data.path for sst2-tsv; an empty path fails the file check.
            (None, _) => (PathBuf::new(), false),
        };
        let weights = match (&r.model.weights, r.model.pretrained, r.model.name) {
            (Some(path), _, _) => Some(path.clone()),
            (None, true, ModelName::MinilmL6) => Some(minilm.join("model.safetensors")),
            _ => None,
        };
        Self {
            corpus,
            corpus_is_default,
            tokenizer: r
                .data
                .tokenizer
                .clone()
                .unwrap_or_else(|| minilm.join("tokenizer.json")),
            weights,
        }
    }
}
