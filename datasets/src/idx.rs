//! The IDX file format of MNIST and Fashion-MNIST, optionally gzip-compressed.
//!
//! Layout (all integers big-endian u32): magic, then one count per dimension, then the data
//! as u8. Images (`idx3`): magic 2051, `[count, rows, cols]`, `count * rows * cols` bytes.
//! Labels (`idx1`): magic 2049, `[count]`, `count` bytes.
//! Source: <http://yann.lecun.com/exdb/mnist/> ("FILE FORMATS FOR THE MNIST DATABASE").

use std::io::Read;
use std::path::Path;

use flate2::read::GzDecoder;

use crate::DataError;

/// Magic number of an IDX file of u8 images (3 dimensions).
pub const IDX_IMAGES_MAGIC: u32 = 2051;
/// Magic number of an IDX file of u8 labels (1 dimension).
pub const IDX_LABELS_MAGIC: u32 = 2049;

/// The contents of an IDX images file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdxImages {
    /// Number of images.
    pub count: usize,
    /// Image height.
    pub rows: usize,
    /// Image width.
    pub cols: usize,
    /// Pixels, `[count, rows, cols]` row-major, 0 (background) ..= 255.
    pub pixels: Vec<u8>,
}

/// The file's bytes, gunzipped when they start with the gzip magic `1f 8b`.
fn read_maybe_gz(path: &Path) -> Result<Vec<u8>, DataError> {
    let raw = std::fs::read(path).map_err(|e| DataError::io(path, e))?;
    if raw.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        GzDecoder::new(raw.as_slice())
            .read_to_end(&mut out)
            .map_err(|e| DataError::io(path, e))?;
        Ok(out)
    } else {
        Ok(raw)
    }
}

fn be_u32(bytes: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}

/// Checks magic and header length; returns the `dims` header counts.
fn parse_header(
    path: &Path,
    bytes: &[u8],
    kind: &'static str,
    magic: u32,
    dims: usize,
) -> Result<Vec<usize>, DataError> {
    let header = 4 * (1 + dims);
    if bytes.len() >= 4 && be_u32(bytes, 0) != magic {
        return Err(DataError::IdxMagic {
            path: path.into(),
            kind,
            found: be_u32(bytes, 0),
            expected: magic,
        });
    }
    if bytes.len() < header {
        let (expected, found) = (header as u64, bytes.len() as u64);
        return Err(DataError::IdxSize {
            path: path.into(),
            expected,
            found,
        });
    }
    let sizes: Vec<usize> = (0..dims)
        .map(|d| be_u32(bytes, 4 + 4 * d) as usize)
        .collect();
    let body = sizes
        .iter()
        .fold(1u64, |acc, &s| acc.saturating_mul(s as u64));
    let expected = body.saturating_add(header as u64);
    if bytes.len() as u64 != expected {
        return Err(DataError::IdxSize {
            path: path.into(),
            expected,
            found: bytes.len() as u64,
        });
    }
    Ok(sizes)
}

/// Reads an IDX images file (plain or `.gz`). Errors name the file: wrong magic
/// ([`DataError::IdxMagic`]), size not matching the header ([`DataError::IdxSize`]), I/O.
pub fn read_idx_images(path: &Path) -> Result<IdxImages, DataError> {
    let mut bytes = read_maybe_gz(path)?;
    let sizes = parse_header(path, &bytes, "images", IDX_IMAGES_MAGIC, 3)?;
    bytes.drain(..16);
    Ok(IdxImages {
        count: sizes[0],
        rows: sizes[1],
        cols: sizes[2],
        pixels: bytes,
    })
}

/// Reads an IDX labels file (plain or `.gz`): one u8 label per item. Errors as
/// [`read_idx_images`].
pub fn read_idx_labels(path: &Path) -> Result<Vec<u8>, DataError> {
    let mut bytes = read_maybe_gz(path)?;
    parse_header(path, &bytes, "labels", IDX_LABELS_MAGIC, 1)?;
    bytes.drain(..8);
    Ok(bytes)
}
