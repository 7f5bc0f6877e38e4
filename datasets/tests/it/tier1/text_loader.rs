//! The text loader: deterministic epochs, padded or packed, and its padding report; on
//! hand-made samples, and on the real Rotten Tomatoes corpus when it has been fetched.

use burnacc_datasets::DataError;
use burnacc_datasets::seed::rng_for;
use burnacc_datasets::text::{
    MiniLmFiles, TextLoader, TextLoaderConfig, TextTokenizer, minilm_present, read_rotten_tomatoes,
    rotten_tomatoes_file, rotten_tomatoes_present, text_data_dir, tokenize_all,
};
use rand::Rng;

/// `n` samples of 3..=40 tokens; sample `i` has label `i`, so batches show which samples
/// they hold and in what order.
fn samples(n: usize) -> (Vec<Vec<u32>>, Vec<usize>) {
    let mut rng = rng_for(&[11]);
    let ids = (0..n)
        .map(|i| {
            let len = rng.random_range(3..=40);
            let mut s = vec![101];
            s.extend(std::iter::repeat_n(1000 + i as u32, len - 2));
            s.push(102);
            s
        })
        .collect();
    (ids, (0..n).collect())
}

fn config(batch_size: usize, packing: Option<usize>) -> TextLoaderConfig {
    TextLoaderConfig {
        batch_size,
        shuffle: true,
        drop_last: false,
        seed: 5,
        packing,
        workers: 0,
        prefetch: 2,
    }
}

fn epoch_labels(loader: &TextLoader, epoch: u64) -> Vec<Vec<i64>> {
    loader.epoch(epoch).map(|b| b.unwrap().labels).collect()
}

#[test]
fn workers_lay_out_the_same_batches() {
    let (ids, labels) = samples(203);
    for packing in [None, Some(64)] {
        let serial = TextLoader::new(ids.clone(), labels.clone(), config(16, packing)).unwrap();
        for workers in [1, 4] {
            let threaded = TextLoader::new(
                ids.clone(),
                labels.clone(),
                TextLoaderConfig {
                    workers,
                    prefetch: 1,
                    ..config(16, packing)
                },
            )
            .unwrap();
            for epoch in [0, 3] {
                let a: Vec<_> = serial.epoch(epoch).map(Result::unwrap).collect();
                let b: Vec<_> = threaded.epoch(epoch).map(Result::unwrap).collect();
                assert_eq!(a.len(), 13);
                assert_eq!(
                    a, b,
                    "{workers} workers, packing {packing:?}, epoch {epoch}"
                );
                // A resumed epoch: the same batches from the fifth on.
                let resumed: Vec<_> = threaded.epoch_from(epoch, 4).map(Result::unwrap).collect();
                assert_eq!(resumed, a[4..]);
            }
            // Dropping an epoch early joins its workers without serving the rest.
            let mut early = threaded.epoch(1);
            assert_eq!(
                early.next().unwrap().unwrap(),
                serial.epoch(1).next().unwrap().unwrap()
            );
            assert_eq!(early.remaining(), 12);
            drop(early);
        }
    }
}

#[test]
fn epochs_are_deterministic_permutations() {
    let (ids, labels) = samples(100);
    let loader = TextLoader::new(ids, labels, config(16, None)).unwrap();
    assert_eq!(loader.len(), 7);
    let e0 = epoch_labels(&loader, 0);
    assert_eq!(e0.len(), 7);
    assert_eq!(e0.last().unwrap().len(), 4);
    assert_eq!(e0, epoch_labels(&loader, 0));
    assert_ne!(e0, epoch_labels(&loader, 1));
    let mut all: Vec<i64> = e0.concat();
    all.sort_unstable();
    assert_eq!(all, (0..100).collect::<Vec<i64>>());
    assert_eq!(
        e0.concat(),
        loader
            .epoch_order(0)
            .iter()
            .map(|&i| i as i64)
            .collect::<Vec<_>>()
    );
}

#[test]
fn packed_epoch_serves_the_same_samples_in_the_same_order() {
    let (ids, labels) = samples(100);
    let padded = TextLoader::new(ids.clone(), labels.clone(), config(16, None)).unwrap();
    let packed = TextLoader::new(ids.clone(), labels, config(16, Some(64))).unwrap();
    for (a, b) in padded.epoch(3).zip(packed.epoch(3)) {
        let (a, b) = (a.unwrap(), b.unwrap());
        assert_eq!(a.labels, b.labels);
        assert!(b.rows <= a.rows);
        assert!(b.seq_len <= 64);
        for (i, &label) in b.labels.iter().enumerate() {
            let expected: Vec<i64> = ids[label as usize].iter().map(|&t| i64::from(t)).collect();
            assert_eq!(b.sample_ids(i), expected);
            assert_eq!(a.sample_ids(i), expected);
        }
    }
    let pad = padded.padding_fraction(None).unwrap();
    let pack = padded.padding_fraction(Some(64)).unwrap();
    assert_eq!(pack, packed.padding_fraction(Some(64)).unwrap());
    assert!(pack < pad, "packed {pack} vs padded {pad}");
}

#[test]
fn drop_last_and_unshuffled_order() {
    let (ids, labels) = samples(10);
    let loader = TextLoader::new(
        ids,
        labels,
        TextLoaderConfig {
            batch_size: 4,
            shuffle: false,
            drop_last: true,
            ..TextLoaderConfig::default()
        },
    )
    .unwrap();
    assert_eq!(loader.len(), 2);
    assert_eq!(
        epoch_labels(&loader, 9),
        vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7]]
    );
}

#[test]
fn invalid_settings_are_refused() {
    let (ids, labels) = samples(10);
    let err = TextLoader::new(ids.clone(), labels.clone(), config(0, None)).unwrap_err();
    assert!(err.to_string().contains("batch_size"), "{err}");
    let err = TextLoader::new(ids.clone(), labels[..9].to_vec(), config(4, None)).unwrap_err();
    assert!(err.to_string().contains("9 labels"), "{err}");
    let longest = ids.iter().map(Vec::len).max().unwrap();
    let err =
        TextLoader::new(ids.clone(), labels.clone(), config(4, Some(longest - 1))).unwrap_err();
    assert!(matches!(err, DataError::SampleTooLong { .. }), "{err}");
    let loader = TextLoader::new(ids, labels, config(4, None)).unwrap();
    assert!(loader.padding_fraction(Some(longest - 1)).is_err());
}

#[test]
fn rotten_tomatoes_padding_with_and_without_packing() {
    let dir = text_data_dir();
    if !(minilm_present(&dir) && rotten_tomatoes_present(&dir)) {
        eprintln!(
            "skipping: text data not found in {}; run scripts/fetch_text_data.sh",
            dir.display()
        );
        return;
    }
    let tokenizer = TextTokenizer::from_file(&MiniLmFiles::at(&dir).tokenizer, 128).unwrap();
    let examples = read_rotten_tomatoes(&rotten_tomatoes_file(&dir, false).unwrap()).unwrap();
    let tokenized = tokenize_all(&tokenizer, &examples).unwrap();
    let (ids, labels) = (tokenized.ids, tokenized.labels);
    assert_eq!(ids.len(), 4866);
    assert!(
        ids.iter()
            .all(|s| s.len() <= 128 && s[0] == 101 && *s.last().unwrap() == 102)
    );
    let tokens: usize = ids.iter().map(Vec::len).sum();
    let longest = ids.iter().map(Vec::len).max().unwrap();

    let loader = TextLoader::new(ids, labels, config(32, Some(128))).unwrap();
    let pad = loader.padding_fraction(None).unwrap();
    let pack = loader.padding_fraction(Some(128)).unwrap();
    let rows: usize = loader.epoch(0).map(|b| b.unwrap().rows).sum();
    eprintln!(
        "Rotten Tomatoes, {} samples, mean {:.1} tokens, longest {longest}; batch 32, \
         max_length 128: padding fraction {pad:.3} padded, {pack:.3} packed \
         ({rows} packed rows vs 4866 padded rows)",
        loader.num_samples(),
        tokens as f64 / 4866.0,
    );
    assert!(pack < pad / 2.0, "packed {pack} vs padded {pad}");
}
