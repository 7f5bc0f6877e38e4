//! Tokenizing a whole list of examples for [`crate::text::TextLoader`].

use crate::DataError;
use crate::text::examples::TextExample;
use crate::text::tokenizer::TextTokenizer;

/// Examples encoded by [`tokenize_all`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TokenizedSet {
    /// `ids[i]`: the `[CLS] … [SEP]` ids of example `i` (at most `max_length` of them).
    pub ids: Vec<Vec<u32>>,
    /// `labels[i]`: the label of example `i`.
    pub labels: Vec<usize>,
    /// Examples longer than `max_length` tokens, cut to it.
    pub truncated: usize,
}

/// Encodes every example with `tokenizer`, in order, counting those truncated.
pub fn tokenize_all(
    tokenizer: &TextTokenizer,
    examples: &[TextExample],
) -> Result<TokenizedSet, DataError> {
    let mut set = TokenizedSet::default();
    for e in examples {
        let (ids, truncated) = tokenizer.encode_reporting_truncation(&e.text)?;
        set.ids.push(ids);
        set.labels.push(e.label);
        set.truncated += usize::from(truncated);
    }
    Ok(set)
}
