//! The recipe's `[data]` section for text → tokenized loaders of the training and held-out
//! splits, and what packing saves.

use super::data::model_classes;
use crate::recipe::{DatasetKind, Recipe, TextPaths};
use anyhow::{Context, Result};
use burnacc_datasets::text::{
    MINILM_TOKENIZER_SHA256, MiniLmFiles, ROTTEN_TOMATOES_SHA256, TextLoader, TextLoaderConfig,
    TextTokenizer, read_rotten_tomatoes, read_sst2_tsv, text_data_dir, tokenize_all,
    train_val_split, verify_sha256,
};

/// Seed of the held-out split of a corpus without one (Rotten Tomatoes): fixed, so the same
/// snippets are held out whatever `train.seed` is and accuracies of runs compare.
pub const TEXT_SPLIT_SEED: u64 = 0;

/// Padding measured over one epoch of the training split.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct PaddingReport {
    /// Padding tokens / all tokens with one sample per row (dynamic padding per batch).
    pub padded: f64,
    /// The same with samples packed into rows of `data.max_length` tokens.
    pub packed: f64,
    /// Whether the run packs.
    pub packing: bool,
}

/// Tokenized loaders and facts about a text corpus.
#[derive(Clone)]
pub struct TextSources {
    /// Training batches (shuffled; the last partial batch is dropped).
    pub train: TextLoader,
    /// Held-out batches (in order, one sample per row).
    pub eval: Option<TextLoader>,
    /// Classes (2 for the sentiment corpora).
    pub num_classes: usize,
    /// Training samples per epoch.
    pub train_samples: usize,
    /// Held-out samples.
    pub eval_samples: usize,
    /// Samples longer than `data.max_length` tokens, truncated.
    pub truncated: usize,
    /// Padding with and without packing.
    pub padding: PaddingReport,
}

/// Reads, splits and tokenizes the recipe's corpus. Default files (fetched by
/// `scripts/fetch_text_data.sh`) are checked against their published SHA-256 first.
pub fn build_text_data(recipe: &Recipe) -> Result<TextSources> {
    let d = &recipe.data;
    let paths = TextPaths::of(recipe);
    if paths.corpus_is_default {
        verify_sha256(&paths.corpus, ROTTEN_TOMATOES_SHA256)?;
    }
    if d.tokenizer.is_none() {
        verify_sha256(&paths.tokenizer, MINILM_TOKENIZER_SHA256)?;
    }
    let (train, eval) = match d.dataset {
        DatasetKind::RottenTomatoes => {
            let all = read_rotten_tomatoes(&paths.corpus)?;
            train_val_split(&all, d.val_fraction, TEXT_SPLIT_SEED)?
        }
        DatasetKind::Sst2Tsv => {
            let all = read_sst2_tsv(&paths.corpus)?;
            match &d.val_path {
                Some(val) => (all, read_sst2_tsv(val)?),
                None => train_val_split(&all, d.val_fraction, TEXT_SPLIT_SEED)?,
            }
        }
        other => anyhow::bail!("{} is not a text dataset", other.as_str()),
    };
    let corpus_labels = train.iter().chain(&eval).map(|e| e.label + 1).max();
    let num_classes = model_classes(recipe, corpus_labels.unwrap_or(0).max(2))?;

    let tokenizer = TextTokenizer::from_file(&paths.tokenizer, d.max_length)?;
    let train = tokenize_all(&tokenizer, &train)?;
    let eval = tokenize_all(&tokenizer, &eval)?;
    let truncated = train.truncated + eval.truncated;
    let t = &recipe.train;
    let train_config = TextLoaderConfig {
        batch_size: t.batch_size,
        shuffle: true,
        drop_last: train.ids.len() >= t.batch_size,
        seed: t.seed,
        packing: d.packing.then_some(d.max_length),
        workers: d.workers,
        prefetch: d.prefetch,
    };
    let eval_config = TextLoaderConfig {
        batch_size: t.eval_batch_size.unwrap_or(t.batch_size),
        // A capped evaluation reads a fixed-seed sample of the whole held-out set (its
        // first batches of a shuffled order), never the first files of a sorted folder.
        shuffle: t.eval_max_batches.is_some(),
        drop_last: false,
        packing: None,
        ..train_config.clone()
    };
    let train_samples = train.ids.len();
    let eval_samples = eval.ids.len();
    if train_samples == 0 {
        anyhow::bail!("the training split of {} is empty", paths.corpus.display());
    }
    let train = TextLoader::new(train.ids, train.labels, train_config)?;
    let padding = PaddingReport {
        padded: train.padding_fraction(None)?,
        packed: train.padding_fraction(Some(d.max_length))?,
        packing: d.packing,
    };
    let eval = (eval_samples > 0)
        .then(|| TextLoader::new(eval.ids, eval.labels, eval_config))
        .transpose()?;
    Ok(TextSources {
        train,
        eval,
        num_classes,
        train_samples,
        eval_samples,
        truncated,
        padding,
    })
}

/// The default MiniLM files, checked (weights hashed: 91 MB), for `model.pretrained`.
pub fn default_minilm_files() -> Result<MiniLmFiles> {
    MiniLmFiles::open(&text_data_dir()).context("model.pretrained needs all-MiniLM-L6-v2")
}
