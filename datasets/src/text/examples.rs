//! Labelled texts: readers for SST-2 style TSV files and the Rotten Tomatoes corpus, and a
//! deterministic train/validation split.

use std::io::Read;
use std::path::Path;

use crate::DataError;
use crate::subset::stratified_split;

/// One text with its class.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TextExample {
    /// The raw text (not tokenized).
    pub text: String,
    /// Class index (binary sentiment: 0 negative, 1 positive).
    pub label: usize,
}

/// Class names of the sentiment readers, index = label: 0 negative, 1 positive.
pub const SENTIMENT_CLASSES: [&str; 2] = ["negative", "positive"];

/// Reads a GLUE SST-2 style file: one `sentence<TAB>label` row per line, label `0` or `1`,
/// optionally after a `sentence<TAB>label` header line. Blank lines are skipped; a sentence
/// may itself hold tabs (the label is after the last one). Errors name the file and the
/// 1-based line of a row without a tab, with an empty sentence, or with another label.
pub fn read_sst2_tsv(path: &Path) -> Result<Vec<TextExample>, DataError> {
    let text = std::fs::read_to_string(path).map_err(|e| DataError::io(path, e))?;
    let bad = |line: usize, reason: String| DataError::BadRow {
        path: path.into(),
        line: line as u64 + 1,
        reason,
    };
    let mut examples = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.trim().is_empty() || (i == 0 && line == "sentence\tlabel") {
            continue;
        }
        let (sentence, label) = line.rsplit_once('\t').ok_or_else(|| {
            bad(
                i,
                format!("expected sentence<TAB>label, found no tab in {line:?}"),
            )
        })?;
        let label = match label.trim() {
            "0" => 0,
            "1" => 1,
            other => return Err(bad(i, format!("label {other:?} is not 0 or 1"))),
        };
        if sentence.trim().is_empty() {
            return Err(bad(i, "empty sentence".into()));
        }
        examples.push(TextExample {
            text: sentence.to_string(),
            label,
        });
    }
    Ok(examples)
}

/// Label of a Rotten Tomatoes `category`: `fresh` 1, `rotten` 0, `plot` (film synopses, not
/// reviews) `None`.
fn rotten_tomatoes_label(category: &str) -> Option<Option<usize>> {
    match category {
        "fresh" => Some(Some(1)),
        "rotten" => Some(Some(0)),
        "plot" => Some(None),
        _ => None,
    }
}

/// Reads a Rotten Tomatoes corpus file (`.csv.bz2`, or plain `.csv`), a CSV with a header
/// naming at least `category` and `text` columns (the corpus has
/// `category,filename,text,movie_name`). Reviews become examples in file order, `fresh` with
/// label 1 and `rotten` with label 0; `plot` rows are dropped. Errors name the file, and the
/// line and value of an unknown category.
pub fn read_rotten_tomatoes(path: &Path) -> Result<Vec<TextExample>, DataError> {
    let file = std::fs::File::open(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => DataError::MissingFile {
            path: path.into(),
            fetch: crate::text::FETCH_TEXT_DATA,
        },
        _ => DataError::io(path, e),
    })?;
    let reader: Box<dyn Read> = if path.extension().is_some_and(|e| e == "bz2") {
        Box::new(bzip2::read::MultiBzDecoder::new(std::io::BufReader::new(
            file,
        )))
    } else {
        Box::new(file)
    };
    let csv_error = |source| DataError::Csv {
        path: path.into(),
        source,
    };
    let mut csv = csv::Reader::from_reader(reader);
    let headers = csv.headers().map_err(csv_error)?.clone();
    let column = |name: &str| {
        headers
            .iter()
            .position(|h| h == name)
            .ok_or_else(|| DataError::BadRow {
                path: path.into(),
                line: 1,
                reason: format!("the header {headers:?} has no {name:?} column"),
            })
    };
    let (category_col, text_col) = (column("category")?, column("text")?);
    let mut examples = Vec::new();
    for record in csv.records() {
        let record = record.map_err(csv_error)?;
        let line = record.position().map_or(0, |p| p.line());
        let category = record.get(category_col).unwrap_or_default();
        let label = rotten_tomatoes_label(category).ok_or_else(|| DataError::BadRow {
            path: path.into(),
            line,
            reason: format!("category {category:?} is not fresh, rotten or plot"),
        })?;
        if let Some(label) = label {
            let text = record.get(text_col).unwrap_or_default().to_string();
            examples.push(TextExample { text, label });
        }
    }
    Ok(examples)
}

/// Splits `examples` into `(train, val)`, holding out `round(n_c * val_fraction)` examples of
/// each label `c` (stratified, at least one per label when `val_fraction > 0`, never all of a
/// label), chosen from `seed` alone: the same examples and seed always give the same split.
/// The two parts are disjoint, cover every example once, and keep the input order.
/// `val_fraction` must be in `[0, 1)`.
pub fn train_val_split(
    examples: &[TextExample],
    val_fraction: f64,
    seed: u64,
) -> Result<(Vec<TextExample>, Vec<TextExample>), DataError> {
    let labels: Vec<usize> = examples.iter().map(|e| e.label).collect();
    let split = stratified_split(&labels, val_fraction, seed)?;
    let pick = |indices: &[usize]| indices.iter().map(|&i| examples[i].clone()).collect();
    Ok((pick(&split.train), pick(&split.val)))
}
