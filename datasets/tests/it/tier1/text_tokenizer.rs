//! The tokenizer on the real all-MiniLM-L6-v2 `tokenizer.json`; skipped (with a message) when
//! `scripts/fetch_text_data.sh` has not been run.

use burnacc_datasets::DataError;
use burnacc_datasets::text::{
    MiniLmFiles, PAD_ID, TextExample, TextTokenizer, minilm_present, text_data_dir, tokenize_all,
};

/// The verified checkpoint files, or `None` (after saying so) when they are not fetched.
fn files() -> Option<MiniLmFiles> {
    let dir = text_data_dir();
    if !minilm_present(&dir) {
        eprintln!(
            "skipping: MiniLM files not found in {}; run scripts/fetch_text_data.sh",
            dir.display()
        );
        return None;
    }
    Some(MiniLmFiles::at(&dir))
}

#[test]
fn encodes_hello_world_as_bert_ids() {
    let Some(files) = files() else { return };
    let tok = TextTokenizer::from_file(&files.tokenizer, 128).unwrap();
    assert_eq!(
        tok.encode("hello, world!").unwrap(),
        vec![101, 7592, 1010, 2088, 999, 102]
    );
    // uncased: lower-cased before WordPiece
    assert_eq!(
        tok.encode("Hello, WORLD!").unwrap(),
        vec![101, 7592, 1010, 2088, 999, 102]
    );
    assert_eq!(tok.encode("").unwrap(), vec![101, 102]);
    assert_eq!(
        (tok.cls_id(), tok.sep_id(), tok.pad_id()),
        (101, 102, PAD_ID)
    );
    assert_eq!(tok.token_to_id("[UNK]"), Some(100));
    assert_eq!(tok.token_to_id("[MASK]"), Some(103));
    assert_eq!(tok.vocab_size(), 30522);
}

#[test]
fn shipped_padding_is_off_and_truncation_follows_max_length() {
    let Some(files) = files() else { return };
    let long = "the quick brown fox jumps over the lazy dog. ".repeat(40); // 400 words
    let wide = TextTokenizer::from_file(&files.tokenizer, 512).unwrap();
    let full = wide.encode(&long).unwrap();
    // the file's own truncation at 128 is replaced
    assert_eq!(full.len(), 40 * 10 + 2);

    for max_length in [3, 5, 16, 128] {
        let tok = TextTokenizer::from_file(&files.tokenizer, max_length).unwrap();
        let ids = tok.encode(&long).unwrap();
        assert_eq!(ids.len(), max_length, "max_length {max_length}");
        assert_eq!(ids[0], 101);
        assert_eq!(ids[max_length - 1], 102);
        // truncation keeps the beginning of the text
        assert_eq!(ids[1..max_length - 1], full[1..max_length - 1]);
        // the file's own padding to 128 is off
        assert_eq!(tok.encode("hello").unwrap(), vec![101, 7592, 102]);
    }
}

#[test]
fn max_length_below_three_is_refused() {
    let Some(files) = files() else { return };
    let err = TextTokenizer::from_file(&files.tokenizer, 2).unwrap_err();
    assert!(
        matches!(
            err,
            DataError::InvalidConfig {
                key: "max_length",
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("max_length = 2"), "{err}");
}

#[test]
fn missing_tokenizer_file_says_how_to_fetch() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tokenizer.json");
    let err = TextTokenizer::from_file(&path, 128).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("tokenizer.json"), "{msg}");
    assert!(msg.contains("scripts/fetch_text_data.sh"), "{msg}");
}

#[test]
fn corrupt_tokenizer_file_names_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("broken-tokenizer.json");
    std::fs::write(&path, "{ not json").unwrap();
    let err = TextTokenizer::from_file(&path, 128).unwrap_err();
    assert!(matches!(err, DataError::Tokenizer { .. }), "{err}");
    assert!(err.to_string().contains("broken-tokenizer.json"), "{err}");
}

#[test]
fn tokenize_all_keeps_order_and_labels() {
    let Some(files) = files() else { return };
    let tok = TextTokenizer::from_file(&files.tokenizer, 8).unwrap();
    let examples = [
        TextExample {
            text: "hello, world!".into(),
            label: 1,
        },
        TextExample {
            text: "hello".into(),
            label: 0,
        },
        TextExample {
            text: "hello hello hello hello hello hello hello hello".into(),
            label: 1,
        },
    ];
    let tokenized = tokenize_all(&tok, &examples).unwrap();
    let (ids, labels) = (tokenized.ids, tokenized.labels);
    assert_eq!(labels, vec![1, 0, 1]);
    assert_eq!(ids[0], vec![101, 7592, 1010, 2088, 999, 102]);
    assert_eq!(ids[1], vec![101, 7592, 102]);
    assert_eq!(ids[2], vec![101, 7592, 7592, 7592, 7592, 7592, 7592, 102]);
}
