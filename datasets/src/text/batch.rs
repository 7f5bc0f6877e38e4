//! The host batch of tokenized texts that the trainer uploads, padded or packed.
//!
//! Both layouts describe each sample by its tokens' segment id: a token attends exactly to
//! the tokens of its own segment (the model builds the block-diagonal mask from
//! `segment_ids`), positions restart at 0 for every sample, and the classifier reads each
//! sample's first token (`[CLS]`) at `cls_index`. So a padded batch and a packed batch of the
//! same samples give the same per-sample outputs, in the same order.

use crate::DataError;
use crate::text::tokenizer::PAD_ID;

/// A batch of tokenized samples laid out in `rows` rows of `seq_len` tokens.
///
/// Every token vector is `[rows * seq_len]`, row-major. A padding token has input id
/// [`PAD_ID`] (0), position 0 and segment 0. `cls_index` and `labels` list the samples in the
/// order they were given to [`pad_batch`] or [`pack_batch`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TextBatch {
    /// Number of rows.
    pub rows: usize,
    /// Tokens per row: the longest row's real tokens.
    pub seq_len: usize,
    /// Token ids, `[rows * seq_len]`; padding = pad id (0).
    pub input_ids: Vec<i64>,
    /// Token type ids, `[rows * seq_len]`, all 0 (single-sentence classification).
    pub token_type_ids: Vec<i64>,
    /// Position ids, `[rows * seq_len]`: 0.. restarting at every sample; 0 on padding.
    pub position_ids: Vec<i64>,
    /// Segment ids, `[rows * seq_len]`: 0 = padding, k = k-th sample (1-based) in its row.
    pub segment_ids: Vec<i64>,
    /// `[samples]`: flat index `row * seq_len + start` of each sample's first token (`[CLS]`).
    pub cls_index: Vec<i64>,
    /// `[samples]`: class of each sample.
    pub labels: Vec<i64>,
}

impl TextBatch {
    /// Number of samples.
    pub fn samples(&self) -> usize {
        self.labels.len()
    }

    /// Whether the batch holds no sample.
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }

    /// Number of token slots, `rows * seq_len`.
    pub fn tokens(&self) -> usize {
        self.rows * self.seq_len
    }

    /// Number of padding slots (segment id 0).
    pub fn padding_tokens(&self) -> usize {
        self.segment_ids.iter().filter(|&&s| s == 0).count()
    }

    /// Padding slots / all slots, in `[0, 1)`; 0 for an empty batch.
    pub fn padding_fraction(&self) -> f64 {
        match self.tokens() {
            0 => 0.0,
            n => self.padding_tokens() as f64 / n as f64,
        }
    }

    /// Token ids of sample `i` (in the order given), read back from the layout.
    pub fn sample_ids(&self, i: usize) -> Vec<i64> {
        let start = self.cls_index[i] as usize;
        let row_end = (start / self.seq_len + 1) * self.seq_len;
        let segment = self.segment_ids[start];
        let len = self.segment_ids[start..row_end]
            .iter()
            .take_while(|&&s| s == segment)
            .count();
        self.input_ids[start..start + len].to_vec()
    }

    /// An all-padding batch of `rows` rows of `seq_len` tokens, without samples.
    fn empty(rows: usize, seq_len: usize) -> Self {
        let n = rows * seq_len;
        TextBatch {
            rows,
            seq_len,
            input_ids: vec![i64::from(PAD_ID); n],
            token_type_ids: vec![0; n],
            position_ids: vec![0; n],
            segment_ids: vec![0; n],
            cls_index: Vec::new(),
            labels: Vec::new(),
        }
    }

    /// Writes `tokens` at `row`, `offset` as segment `segment` and returns its flat start.
    fn place(&mut self, row: usize, offset: usize, segment: i64, tokens: &[u32]) -> i64 {
        let start = row * self.seq_len + offset;
        for (p, &id) in tokens.iter().enumerate() {
            self.input_ids[start + p] = i64::from(id);
            self.position_ids[start + p] = p as i64;
            self.segment_ids[start + p] = segment;
        }
        start as i64
    }
}

/// Checks the arguments common to both layouts; panics on a programming error.
fn check_samples(samples: &[&[u32]], labels: &[usize]) {
    assert_eq!(
        samples.len(),
        labels.len(),
        "{} samples but {} labels",
        samples.len(),
        labels.len()
    );
    if let Some(i) = samples.iter().position(|s| s.is_empty()) {
        panic!("sample {i} has no tokens (an encoding holds at least [CLS] and [SEP])");
    }
}

fn labels_i64(labels: &[usize]) -> Vec<i64> {
    labels.iter().map(|&l| l as i64).collect()
}

/// Dynamic padding (like Hugging Face's `DataCollatorWithPadding`): one sample per row,
/// `seq_len` = the longest sample, segment id 1 on real tokens.
///
/// Panics if `samples` and `labels` differ in length or a sample is empty.
pub fn pad_batch(samples: &[&[u32]], labels: &[usize]) -> TextBatch {
    check_samples(samples, labels);
    let seq_len = samples.iter().map(|s| s.len()).max().unwrap_or(0);
    let mut batch = TextBatch::empty(samples.len(), seq_len);
    batch.cls_index = samples
        .iter()
        .enumerate()
        .map(|(row, s)| batch.place(row, 0, 1, s))
        .collect();
    batch.labels = labels_i64(labels);
    batch
}

/// Where [`pack_rows`] puts one sample.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Placement {
    /// Row index.
    pub row: usize,
    /// Token offset of the sample's first token in its row.
    pub offset: usize,
    /// 1-based segment id of the sample in its row.
    pub segment: i64,
}

/// Row assignment of sequence packing: each sample's [`Placement`] (in the order given) and
/// the number of tokens of each row.
///
/// First-fit decreasing: samples are taken longest first (ties in the order given) and each
/// goes into the first row with room for it, else into a new row of capacity `max_len`.
pub(crate) fn pack_rows(
    lengths: &[usize],
    max_len: usize,
) -> Result<(Vec<Placement>, Vec<usize>), DataError> {
    if let Some((index, &len)) = lengths.iter().enumerate().find(|&(_, &l)| l > max_len) {
        return Err(DataError::SampleTooLong {
            index,
            len,
            max_len,
        });
    }
    let mut order: Vec<usize> = (0..lengths.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(lengths[i]));
    let mut fill: Vec<usize> = Vec::new();
    let mut count: Vec<i64> = Vec::new();
    let mut placement = vec![Placement::default(); lengths.len()];
    for i in order {
        let len = lengths[i];
        let row = match fill.iter().position(|&f| f + len <= max_len) {
            Some(row) => row,
            None => {
                fill.push(0);
                count.push(0);
                fill.len() - 1
            }
        };
        count[row] += 1;
        placement[i] = Placement {
            row,
            offset: fill[row],
            segment: count[row],
        };
        fill[row] += len;
    }
    Ok((placement, fill))
}

/// Sequence packing: several samples per row, placed first-fit decreasing into rows of
/// capacity `max_len` (longest sample first, ties in the order given; each into the first
/// row with room, else a new row); `seq_len` = the longest packed row (at most `max_len`).
/// In each row, samples sit left to right in the order they were placed, with segment ids
/// 1, 2, … and positions restarting at 0 for every sample. `cls_index` and `labels` keep the order given.
///
/// Errors with [`DataError::SampleTooLong`] if a sample is longer than `max_len`; panics if
/// `samples` and `labels` differ in length or a sample is empty.
pub fn pack_batch(
    samples: &[&[u32]],
    labels: &[usize],
    max_len: usize,
) -> Result<TextBatch, DataError> {
    check_samples(samples, labels);
    let lengths: Vec<usize> = samples.iter().map(|s| s.len()).collect();
    let (placement, fill) = pack_rows(&lengths, max_len)?;
    let seq_len = fill.iter().copied().max().unwrap_or(0);
    let mut batch = TextBatch::empty(fill.len(), seq_len);
    batch.cls_index = samples
        .iter()
        .zip(&placement)
        .map(|(s, p)| batch.place(p.row, p.offset, p.segment, s))
        .collect();
    batch.labels = labels_i64(labels);
    Ok(batch)
}
