//! SHA-256 verification of downloaded data files.

use std::io::Read;
use std::path::Path;

use sha2::{Digest, Sha256};

use crate::DataError;

/// The script that fetches every text data file (run from the repository root).
pub const FETCH_TEXT_DATA: &str = "scripts/fetch_text_data.sh";

/// SHA-256 of the file at `path`, as 64 lowercase hex digits; the file is streamed, not loaded.
/// A missing file gives [`DataError::MissingFile`] (saying to run [`FETCH_TEXT_DATA`]).
pub fn sha256_file(path: &Path) -> Result<String, DataError> {
    let mut file = std::fs::File::open(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => DataError::MissingFile {
            path: path.into(),
            fetch: FETCH_TEXT_DATA,
        },
        _ => DataError::io(path, e),
    })?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buf).map_err(|e| DataError::io(path, e))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

/// Checks that the file at `path` has SHA-256 `expected_hex` (hex, any case).
/// Errors: [`DataError::MissingFile`] when it does not exist, [`DataError::Checksum`] (naming
/// the file, the expected and the actual digest) when it differs.
pub fn verify_sha256(path: &Path, expected_hex: &str) -> Result<(), DataError> {
    let actual = sha256_file(path)?;
    if actual.eq_ignore_ascii_case(expected_hex) {
        Ok(())
    } else {
        Err(DataError::Checksum {
            path: path.into(),
            expected: expected_hex.to_ascii_lowercase(),
            actual,
            fetch: FETCH_TEXT_DATA,
        })
    }
}
