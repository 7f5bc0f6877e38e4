//! Tokenizing a whole list of examples for [`crate::text::TextLoader`].

use crate::DataError;
use crate::text::examples::TextExample;
use crate::text::tokenizer::TextTokenizer;

/// Encodes every example with `tokenizer`, in order: `(ids, labels)` with `ids[i]` the
/// `[CLS] … [SEP]` ids of `examples[i]` (at most `tokenizer.max_length()` of them) and
/// `labels[i]` its label.
pub fn tokenize_all(
    tokenizer: &TextTokenizer,
    examples: &[TextExample],
) -> Result<(Vec<Vec<u32>>, Vec<usize>), DataError> {
    let ids = examples
        .iter()
        .map(|e| tokenizer.encode(&e.text))
        .collect::<Result<Vec<_>, _>>()?;
    let labels = examples.iter().map(|e| e.label).collect();
    Ok((ids, labels))
}
