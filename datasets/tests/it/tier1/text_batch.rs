//! Layout of padded and packed text batches, on hand-made token ids.

use std::collections::HashMap;

use burnacc_datasets::DataError;
use burnacc_datasets::seed::rng_for;
use burnacc_datasets::text::{TextBatch, pack_batch, pad_batch};
use rand::Rng;

const A: &[u32] = &[101, 5, 6, 102];
const B: &[u32] = &[101, 7, 102];
const C: &[u32] = &[101, 102];

#[test]
fn padded_layout_of_a_small_batch() {
    let batch = pad_batch(&[A, B, C], &[1, 0, 1]);
    #[rustfmt::skip]
    let expected = TextBatch {
        rows: 3,
        seq_len: 4,
        input_ids:      vec![101, 5, 6, 102,  101, 7, 102, 0,  101, 102, 0, 0],
        token_type_ids: vec![0; 12],
        position_ids:   vec![0, 1, 2, 3,      0, 1, 2, 0,      0, 1, 0, 0],
        segment_ids:    vec![1, 1, 1, 1,      1, 1, 1, 0,      1, 1, 0, 0],
        cls_index: vec![0, 4, 8],
        labels: vec![1, 0, 1],
    };
    assert_eq!(batch, expected);
    assert_eq!(batch.samples(), 3);
    assert_eq!(batch.padding_tokens(), 3);
    assert_eq!(batch.padding_fraction(), 0.25);
}

#[test]
fn packed_layout_of_a_small_batch() {
    // first-fit decreasing into rows of 6: A (4) opens row 0, B (3) does not fit beside it
    // and opens row 1, C (2) fills row 0
    let batch = pack_batch(&[A, B, C], &[1, 0, 1], 6).unwrap();
    #[rustfmt::skip]
    let expected = TextBatch {
        rows: 2,
        seq_len: 6,
        input_ids:      vec![101, 5, 6, 102, 101, 102,  101, 7, 102, 0, 0, 0],
        token_type_ids: vec![0; 12],
        position_ids:   vec![0, 1, 2, 3, 0, 1,          0, 1, 2, 0, 0, 0],
        segment_ids:    vec![1, 1, 1, 1, 2, 2,          1, 1, 1, 0, 0, 0],
        cls_index: vec![0, 6, 4],
        labels: vec![1, 0, 1],
    };
    assert_eq!(batch, expected);

    // all three in one row of 9: no padding at all
    let one = pack_batch(&[A, B, C], &[1, 0, 1], 9).unwrap();
    assert_eq!((one.rows, one.seq_len, one.padding_tokens()), (1, 9, 0));
    assert_eq!(one.segment_ids, vec![1, 1, 1, 1, 2, 2, 2, 3, 3]);
    assert_eq!(one.position_ids, vec![0, 1, 2, 3, 0, 1, 2, 0, 1]);
    assert_eq!(one.cls_index, vec![0, 4, 7]);

    // seq_len is the longest packed row, not max_len
    let short = pack_batch(&[B, C], &[0, 1], 100).unwrap();
    assert_eq!((short.rows, short.seq_len), (1, 5));
}

#[test]
fn empty_batches() {
    let pad = pad_batch(&[], &[]);
    let pack = pack_batch(&[], &[], 8).unwrap();
    for b in [pad, pack] {
        assert_eq!((b.rows, b.seq_len, b.samples()), (0, 0, 0));
        assert_eq!(b.padding_fraction(), 0.0);
    }
}

#[test]
fn sample_longer_than_max_len_is_an_error() {
    let err = pack_batch(&[C, A], &[0, 1], 3).unwrap_err();
    assert!(
        matches!(
            err,
            DataError::SampleTooLong {
                index: 1,
                len: 4,
                max_len: 3
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("sample 1 has 4 tokens"), "{err}");
}

#[test]
#[should_panic(expected = "2 samples but 1 labels")]
fn labels_must_match_samples() {
    pad_batch(&[A, B], &[1]);
}

/// `n` samples with lengths like tokenized review snippets (most short, a tail up to 128),
/// every token id distinct: sample `i` is `[101, 1000 + 200 i, 1001 + 200 i, …, 102]`.
fn realistic_samples(n: usize, seed: u64) -> Vec<Vec<u32>> {
    let mut rng = rng_for(&[seed]);
    (0..n)
        .map(|i| {
            let u: f64 = rng.random();
            let len = (6.0 + 122.0 * u * u * u) as usize; // 6..=128, skewed short
            let mut s = vec![101];
            s.extend((0..len as u32 - 2).map(|j| 1000 + 200 * i as u32 + j));
            s.push(102);
            s
        })
        .collect()
}

/// Every invariant of the layout contract, for `samples` given in order.
fn check_layout(batch: &TextBatch, samples: &[&[u32]], labels: &[usize]) {
    let n = batch.rows * batch.seq_len;
    for v in [
        &batch.input_ids,
        &batch.token_type_ids,
        &batch.position_ids,
        &batch.segment_ids,
    ] {
        assert_eq!(v.len(), n);
    }
    assert!(batch.token_type_ids.iter().all(|&t| t == 0));
    assert_eq!(batch.cls_index.len(), samples.len());
    let expected_labels: Vec<i64> = labels.iter().map(|&l| l as i64).collect();
    assert_eq!(batch.labels, expected_labels);

    // every real token of every sample appears exactly once, and nothing else does
    let mut count: HashMap<i64, usize> = HashMap::new();
    for (&id, &seg) in batch.input_ids.iter().zip(&batch.segment_ids) {
        if seg == 0 {
            assert_eq!(id, 0, "padding holds the pad id");
        } else if id >= 1000 {
            *count.entry(id).or_default() += 1;
        }
    }
    let total: usize = samples.iter().map(|s| s.len()).sum();
    assert_eq!(n - batch.padding_tokens(), total);
    for (i, s) in samples.iter().enumerate() {
        // cls_index points at the sample's first token, and its tokens follow in one segment
        let start = batch.cls_index[i] as usize;
        assert_eq!(batch.input_ids[start], 101);
        let ids: Vec<i64> = s.iter().map(|&t| i64::from(t)).collect();
        assert_eq!(batch.sample_ids(i), ids, "sample {i}");
        let seg = batch.segment_ids[start];
        assert!(seg >= 1);
        assert!(
            start % batch.seq_len + s.len() <= batch.seq_len,
            "sample {i} crosses a row"
        );
        for (p, &t) in s.iter().enumerate() {
            assert_eq!(batch.position_ids[start + p], p as i64);
            assert_eq!(batch.segment_ids[start + p], seg);
            if t >= 1000 {
                assert_eq!(count[&i64::from(t)], 1, "token {t} of sample {i}");
            }
        }
    }
    // in each row, segments are 1, 2, … left to right, then padding to the end
    for row in batch.segment_ids.chunks(batch.seq_len) {
        assert_eq!(row[0], 1, "row {row:?} does not start with a sample");
        let mut expected = 1;
        let mut padding = false;
        for w in row.windows(2) {
            if w[1] == 0 {
                padding = true;
            } else {
                assert!(!padding, "real token after padding in {row:?}");
                if w[1] != w[0] {
                    expected += 1;
                    assert_eq!(w[1], expected, "segments out of order in {row:?}");
                }
            }
        }
    }
    let starts: Vec<usize> = batch.cls_index.iter().map(|&c| c as usize).collect();
    let mut unique = starts.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), starts.len(), "two samples share a start");
}

#[test]
fn packing_beats_padding_on_a_realistic_mix() {
    let samples = realistic_samples(256, 3);
    let labels: Vec<usize> = (0..256).map(|i| i % 2).collect();
    let (mut pad_padding, mut pack_padding, mut pad_total, mut pack_total) = (0, 0, 0, 0);
    for (chunk, chunk_labels) in samples.chunks(32).zip(labels.chunks(32)) {
        let refs: Vec<&[u32]> = chunk.iter().map(Vec::as_slice).collect();
        let pad = pad_batch(&refs, chunk_labels);
        let pack = pack_batch(&refs, chunk_labels, 128).unwrap();
        check_layout(&pad, &refs, chunk_labels);
        check_layout(&pack, &refs, chunk_labels);
        assert_eq!(pad.rows, 32);
        assert!(pack.rows < pad.rows);
        assert!(pack.padding_fraction() < pad.padding_fraction());
        // same samples, same order of per-sample outputs
        assert_eq!(pad.labels, pack.labels);
        for i in 0..refs.len() {
            assert_eq!(pad.sample_ids(i), pack.sample_ids(i));
        }
        pad_padding += pad.padding_tokens();
        pad_total += pad.tokens();
        pack_padding += pack.padding_tokens();
        pack_total += pack.tokens();
    }
    let pad = pad_padding as f64 / pad_total as f64;
    let pack = pack_padding as f64 / pack_total as f64;
    eprintln!("realistic mix, batch 32, max_len 128: padding {pad:.3} padded, {pack:.3} packed");
    assert!(pad > 0.5, "{pad}");
    assert!(pack < 0.2, "{pack}");
}
