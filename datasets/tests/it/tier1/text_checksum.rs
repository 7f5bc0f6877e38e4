//! SHA-256 verification and the checked opening of the fetched text data.

use std::path::Path;

use burnacc_datasets::DataError;
use burnacc_datasets::text::{
    MINILM_DIR, MINILM_TOKENIZER_SHA256, MiniLmFiles, ROTTEN_TOMATOES_DIR, minilm_present,
    rotten_tomatoes_file, rotten_tomatoes_present, sha256_file, text_data_dir, verify_sha256,
};

/// SHA-256 of the three bytes `abc` (FIPS 180-2, appendix B.1).
const ABC_SHA256: &str = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

#[test]
fn digest_of_a_known_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("abc.txt");
    std::fs::write(&path, "abc").unwrap();
    assert_eq!(sha256_file(&path).unwrap(), ABC_SHA256);
    verify_sha256(&path, ABC_SHA256).unwrap();
    verify_sha256(&path, &ABC_SHA256.to_uppercase()).unwrap();
}

#[test]
fn mismatch_names_the_file_and_both_digests() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("corrupted-copy.txt");
    std::fs::write(&path, "abd").unwrap();
    let err = verify_sha256(&path, ABC_SHA256).unwrap_err();
    let DataError::Checksum {
        path: ref bad,
        ref expected,
        ref actual,
        ..
    } = err
    else {
        panic!("expected a checksum error, got {err}");
    };
    assert_eq!(bad, &path);
    assert_eq!(expected, ABC_SHA256);
    assert_eq!(actual, &sha256_file(&path).unwrap());
    let msg = err.to_string();
    assert!(msg.contains("corrupted-copy.txt"), "{msg}");
    assert!(
        msg.contains(ABC_SHA256) && msg.contains(actual.as_str()),
        "{msg}"
    );
}

#[test]
fn missing_file_says_to_run_the_fetch_script() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("vocab.txt");
    let err = verify_sha256(&path, ABC_SHA256).unwrap_err();
    assert!(matches!(err, DataError::MissingFile { .. }), "{err}");
    let msg = err.to_string();
    assert!(msg.contains("vocab.txt"), "{msg}");
    assert!(msg.contains("scripts/fetch_text_data.sh"), "{msg}");

    // the same through the asset openers, on an empty data folder
    for err in [
        MiniLmFiles::open(dir.path()).unwrap_err(),
        rotten_tomatoes_file(dir.path(), false).unwrap_err(),
    ] {
        assert!(matches!(err, DataError::MissingFile { .. }), "{err}");
        assert!(
            err.to_string().contains("scripts/fetch_text_data.sh"),
            "{err}"
        );
    }
    assert!(!minilm_present(dir.path()));
    assert!(!rotten_tomatoes_present(dir.path()));
}

fn data_or_skip() -> Option<std::path::PathBuf> {
    let dir = text_data_dir();
    if minilm_present(&dir) && rotten_tomatoes_present(&dir) {
        Some(dir)
    } else {
        eprintln!(
            "skipping: text data not found in {}; run scripts/fetch_text_data.sh",
            dir.display()
        );
        None
    }
}

#[test]
fn real_files_verify() {
    let Some(dir) = data_or_skip() else { return };
    let files = MiniLmFiles::open(&dir).unwrap();
    assert_eq!(files, MiniLmFiles::at(&dir));
    assert!(
        files
            .weights
            .ends_with("all-minilm-l6-v2/model.safetensors")
    );
    for full in [false, true] {
        let path = rotten_tomatoes_file(&dir, full).unwrap();
        assert!(path.starts_with(dir.join(ROTTEN_TOMATOES_DIR)));
    }
}

/// A copy of the data folder in which the big files are links to the real ones.
fn linked_copy(real: &Path, copy: &Path) -> MiniLmFiles {
    let (real, files) = (MiniLmFiles::at(real), MiniLmFiles::at(copy));
    std::fs::create_dir_all(copy.join(MINILM_DIR)).unwrap();
    for (from, to) in [
        (&real.vocab, &files.vocab),
        (&real.tokenizer, &files.tokenizer),
        (&real.weights, &files.weights),
        (&real.config, &files.config),
    ] {
        std::os::unix::fs::symlink(from, to).unwrap();
    }
    files
}

#[test]
fn corrupted_real_tokenizer_is_named() {
    let Some(dir) = data_or_skip() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let files = linked_copy(&dir, tmp.path());
    let mut bytes = std::fs::read(&files.tokenizer).unwrap();
    bytes[100] ^= 1;
    std::fs::remove_file(&files.tokenizer).unwrap();
    std::fs::write(&files.tokenizer, &bytes).unwrap();
    let err = MiniLmFiles::open(tmp.path()).unwrap_err();
    assert!(matches!(err, DataError::Checksum { .. }), "{err}");
    let msg = err.to_string();
    assert!(
        msg.contains(&files.tokenizer.display().to_string()),
        "{msg}"
    );
    assert!(msg.contains(MINILM_TOKENIZER_SHA256), "{msg}");
}

#[test]
fn config_with_another_hidden_size_names_the_key() {
    let Some(dir) = data_or_skip() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let files = linked_copy(&dir, tmp.path());
    std::fs::remove_file(&files.config).unwrap();
    std::fs::write(&files.config, r#"{"hidden_size": 768}"#).unwrap();
    let msg = MiniLmFiles::open(tmp.path()).unwrap_err().to_string();
    assert!(
        msg.contains("config.json") && msg.contains("hidden_size"),
        "{msg}"
    );
    assert!(msg.contains("768") && msg.contains("384"), "{msg}");

    std::fs::write(&files.config, "{").unwrap();
    let err = MiniLmFiles::open(tmp.path()).unwrap_err();
    assert!(matches!(err, DataError::Json { .. }), "{err}");
    assert!(err.to_string().contains("config.json"), "{err}");
}

/// Missing text data: a skip outside CI, a failure naming the fetch command under CI (`CI`
/// set), so that a download that did not happen cannot pass there. Each environment checks
/// its own branch.
#[test]
fn missing_text_data_fails_under_ci_and_is_skipped_elsewhere() {
    use burnacc_datasets::text::fetched_or_skip;
    let dir = std::path::Path::new("/nonexistent/text");
    assert!(fetched_or_skip(true, "the corpus", dir));
    let missing = std::panic::catch_unwind(|| fetched_or_skip(false, "the corpus", dir));
    match std::env::var_os("CI") {
        Some(_) => {
            let payload = missing.expect_err("under CI, missing data must fail");
            let message = payload
                .downcast_ref::<String>()
                .cloned()
                .unwrap_or_default();
            assert!(message.contains("scripts/fetch_text_data.sh"), "{message}");
            assert!(message.contains("/nonexistent/text"), "{message}");
        }
        None => assert!(!missing.expect("outside CI, missing data is a skip")),
    }
}
