//! Text example readers (SST-2 TSV, Rotten Tomatoes CSV/bz2) and the train/validation split.

use std::collections::HashSet;
use std::io::Write;

use burnacc_datasets::DataError;
use burnacc_datasets::text::{
    TextExample, read_rotten_tomatoes, read_sst2_tsv, rotten_tomatoes_file,
    rotten_tomatoes_present, text_data_dir, train_val_split,
};

fn ex(text: &str, label: usize) -> TextExample {
    TextExample {
        text: text.into(),
        label,
    }
}

#[test]
fn reads_sst2_tsv_with_and_without_header() {
    let dir = tempfile::tempdir().unwrap();
    let with = dir.path().join("train.tsv");
    std::fs::write(
        &with,
        "sentence\tlabel\r\nit 's a charming journey . \t1\r\n\r\nhide new secretions\t0\n",
    )
    .unwrap();
    assert_eq!(
        read_sst2_tsv(&with).unwrap(),
        vec![
            ex("it 's a charming journey . ", 1),
            ex("hide new secretions", 0)
        ]
    );
    let without = dir.path().join("plain.tsv");
    std::fs::write(&without, "a\tb\t1\nc\t0").unwrap();
    assert_eq!(
        read_sst2_tsv(&without).unwrap(),
        vec![ex("a\tb", 1), ex("c", 0)]
    );
}

#[test]
fn bad_tsv_rows_name_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad-label.tsv");
    std::fs::write(&path, "sentence\tlabel\ngood\t1\nbad\tpositive\n").unwrap();
    let err = read_sst2_tsv(&path).unwrap_err();
    assert!(matches!(err, DataError::BadRow { line: 3, .. }), "{err}");
    let msg = err.to_string();
    assert!(
        msg.contains("bad-label.tsv") && msg.contains("line 3"),
        "{msg}"
    );
    assert!(msg.contains("positive"), "{msg}");

    std::fs::write(&path, "fine\t0\nno tab here\n").unwrap();
    let msg = read_sst2_tsv(&path).unwrap_err().to_string();
    assert!(
        msg.contains("line 2") && msg.contains("no tab here"),
        "{msg}"
    );

    std::fs::write(&path, "fine\t0\nfine\t2\n").unwrap();
    let msg = read_sst2_tsv(&path).unwrap_err().to_string();
    assert!(msg.contains("line 2") && msg.contains("\"2\""), "{msg}");
}

const SMALL_CSV: &str = "category,filename,text,movie_name\n\
fresh,a.txt,\"A joy, start to finish.\",A\n\
plot,b.txt,A man walks.,B\n\
rotten,c.txt,\"Dull.\nVery dull.\",C\n";

#[test]
fn reads_rotten_tomatoes_csv_and_bz2() {
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("small.csv");
    std::fs::write(&plain, SMALL_CSV).unwrap();
    let compressed = dir.path().join("small.csv.bz2");
    let mut enc = bzip2::write::BzEncoder::new(
        std::fs::File::create(&compressed).unwrap(),
        bzip2::Compression::default(),
    );
    enc.write_all(SMALL_CSV.as_bytes()).unwrap();
    enc.finish().unwrap();
    let expected = vec![ex("A joy, start to finish.", 1), ex("Dull.\nVery dull.", 0)];
    assert_eq!(read_rotten_tomatoes(&plain).unwrap(), expected);
    assert_eq!(read_rotten_tomatoes(&compressed).unwrap(), expected);
}

#[test]
fn unknown_category_names_file_line_and_value() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("odd.csv");
    std::fs::write(&path, format!("{SMALL_CSV}certified,d.txt,Hmm.,D\n")).unwrap();
    let msg = read_rotten_tomatoes(&path).unwrap_err().to_string();
    assert!(msg.contains("odd.csv") && msg.contains("line 6"), "{msg}");
    assert!(msg.contains("certified"), "{msg}");

    std::fs::write(&path, "label,text\nfresh,x\n").unwrap();
    let msg = read_rotten_tomatoes(&path).unwrap_err().to_string();
    assert!(
        msg.contains("odd.csv") && msg.contains("\"category\""),
        "{msg}"
    );
}

#[test]
fn split_is_deterministic_stratified_and_disjoint() {
    let examples: Vec<TextExample> = (0..103)
        .map(|i| ex(&format!("text {i}"), usize::from(i % 3 == 0)))
        .collect();
    let (train, val) = train_val_split(&examples, 0.2, 7).unwrap();
    assert_eq!(
        train_val_split(&examples, 0.2, 7).unwrap(),
        (train.clone(), val.clone())
    );
    assert_ne!(train_val_split(&examples, 0.2, 8).unwrap().1, val);
    // 35 of label 1 -> 7 held out; 68 of label 0 -> 14 (13.6 rounded)
    assert_eq!(val.iter().filter(|e| e.label == 1).count(), 7);
    assert_eq!(val.iter().filter(|e| e.label == 0).count(), 14);
    let t: HashSet<_> = train.iter().map(|e| &e.text).collect();
    let v: HashSet<_> = val.iter().map(|e| &e.text).collect();
    assert!(t.is_disjoint(&v));
    assert_eq!(t.len() + v.len(), examples.len());
    assert!(train_val_split(&examples, 1.0, 7).is_err());
}

#[test]
fn real_rotten_tomatoes_counts() {
    let dir = text_data_dir();
    if !rotten_tomatoes_present(&dir) {
        eprintln!(
            "skipping: Rotten Tomatoes not found in {}; run scripts/fetch_text_data.sh",
            dir.display()
        );
        return;
    }
    let examples = read_rotten_tomatoes(&rotten_tomatoes_file(&dir, false).unwrap()).unwrap();
    let fresh = examples.iter().filter(|e| e.label == 1).count();
    let rotten = examples.iter().filter(|e| e.label == 0).count();
    assert_eq!((fresh, rotten), (2455, 2411));
    assert!(examples.iter().all(|e| !e.text.trim().is_empty()));

    let full = read_rotten_tomatoes(&rotten_tomatoes_file(&dir, true).unwrap()).unwrap();
    let fresh = full.iter().filter(|e| e.label == 1).count();
    assert_eq!((fresh, full.len() - fresh), (7403, 5405));

    let (train, val) = train_val_split(&examples, 0.1, 42).unwrap();
    assert_eq!(train_val_split(&examples, 0.1, 42).unwrap().1, val);
    assert_eq!(train.len() + val.len(), 4866);
    // round(2455 * 0.1) fresh and round(2411 * 0.1) rotten held out
    assert_eq!(val.iter().filter(|e| e.label == 1).count(), 246);
    assert_eq!(val.iter().filter(|e| e.label == 0).count(), 241);
    let mut all: Vec<&str> = train.iter().chain(&val).map(|e| e.text.as_str()).collect();
    let mut original: Vec<&str> = examples.iter().map(|e| e.text.as_str()).collect();
    all.sort_unstable();
    original.sort_unstable();
    assert_eq!(all, original);
    eprintln!(
        "Rotten Tomatoes: {} examples ({} fresh), split {} train / {} val",
        examples.len(),
        2455,
        train.len(),
        val.len()
    );
}
