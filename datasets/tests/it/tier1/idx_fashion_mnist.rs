//! IDX parsing and the Fashion-MNIST dataset, on small files written here; plus a check of the
//! real files when `scripts/fetch_fashion_mnist.sh` has been run (skipped politely otherwise).

use std::io::Write;
use std::path::{Path, PathBuf};

use burnacc_datasets::idx::{read_idx_images, read_idx_labels};
use burnacc_datasets::{
    DataError, FASHION_MNIST_MEAN, FASHION_MNIST_STD, FashionMnist, FashionMnistConfig,
    FashionMnistSplit, ImageDataset, fashion_mnist_dir, fashion_mnist_present,
};
use flate2::Compression;
use flate2::write::GzEncoder;

fn idx_bytes(magic: u32, dims: &[u32], data: &[u8]) -> Vec<u8> {
    let mut out = magic.to_be_bytes().to_vec();
    for d in dims {
        out.extend_from_slice(&d.to_be_bytes());
    }
    out.extend_from_slice(data);
    out
}

fn write_gz(path: &Path, bytes: &[u8]) {
    let mut enc = GzEncoder::new(std::fs::File::create(path).unwrap(), Compression::default());
    enc.write_all(bytes).unwrap();
    enc.finish().unwrap();
}

/// 3 images of 2x2 (pixel values 0..12) and labels [9, 0, 3], gzipped.
fn small_pair(dir: &Path) -> (PathBuf, PathBuf) {
    let images = dir.join("imgs-idx3-ubyte.gz");
    let labels = dir.join("labels-idx1-ubyte.gz");
    let pixels: Vec<u8> = (0..12).map(|i| i * 20).collect();
    write_gz(&images, &idx_bytes(2051, &[3, 2, 2], &pixels));
    write_gz(&labels, &idx_bytes(2049, &[3], &[9, 0, 3]));
    (images, labels)
}

#[test]
fn reads_gzipped_and_plain_idx() {
    let dir = tempfile::tempdir().unwrap();
    let (images, labels) = small_pair(dir.path());
    let imgs = read_idx_images(&images).unwrap();
    assert_eq!((imgs.count, imgs.rows, imgs.cols), (3, 2, 2));
    assert_eq!(imgs.pixels[5], 100);
    assert_eq!(read_idx_labels(&labels).unwrap(), vec![9, 0, 3]);

    let plain = dir.path().join("plain-labels");
    std::fs::write(&plain, idx_bytes(2049, &[2], &[1, 2])).unwrap();
    assert_eq!(read_idx_labels(&plain).unwrap(), vec![1, 2]);
}

#[test]
fn wrong_magic_names_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let (images, labels) = small_pair(dir.path());
    // a labels file where images are expected, and the reverse
    let err = read_idx_images(&labels).unwrap_err();
    assert!(
        matches!(
            err,
            DataError::IdxMagic {
                found: 2049,
                expected: 2051,
                ..
            }
        ),
        "{err:?}"
    );
    let msg = err.to_string();
    assert!(
        msg.contains(&labels.display().to_string()) && msg.contains("2049"),
        "{msg}"
    );
    assert!(matches!(
        read_idx_labels(&images),
        Err(DataError::IdxMagic { found: 2051, .. })
    ));
}

#[test]
fn size_and_count_errors() {
    let dir = tempfile::tempdir().unwrap();
    let (images, labels) = small_pair(dir.path());

    let truncated = dir.path().join("short.gz");
    write_gz(&truncated, &idx_bytes(2051, &[3, 2, 2], &[0; 11]));
    let err = read_idx_images(&truncated).unwrap_err();
    assert!(
        matches!(
            err,
            DataError::IdxSize {
                expected: 28,
                found: 27,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("short.gz"));

    let two_labels = dir.path().join("two-labels.gz");
    write_gz(&two_labels, &idx_bytes(2049, &[2], &[1, 2]));
    let err =
        FashionMnist::from_idx_files(&images, &two_labels, None, FashionMnistConfig::default())
            .unwrap_err();
    let msg = err.to_string();
    assert!(
        matches!(
            err,
            DataError::IdxMismatch {
                images: 3,
                labels: 2,
                ..
            }
        ),
        "{msg}"
    );
    assert!(
        msg.contains("two-labels.gz") && msg.contains("imgs-idx3-ubyte.gz"),
        "{msg}"
    );

    let err = FashionMnist::from_idx_files(
        &images,
        &labels,
        Some(60_000),
        FashionMnistConfig::default(),
    )
    .unwrap_err();
    assert!(
        matches!(
            err,
            DataError::IdxCount {
                found: 3,
                expected: 60_000,
                ..
            }
        ),
        "{err}"
    );

    let bad_label = dir.path().join("bad-label.gz");
    write_gz(&bad_label, &idx_bytes(2049, &[3], &[1, 10, 2]));
    let err =
        FashionMnist::from_idx_files(&images, &bad_label, None, FashionMnistConfig::default())
            .unwrap_err();
    assert!(
        matches!(
            err,
            DataError::IdxLabel {
                index: 1,
                value: 10,
                ..
            }
        ),
        "{err}"
    );

    let missing = dir.path().join("nope.gz");
    assert!(
        read_idx_labels(&missing)
            .unwrap_err()
            .to_string()
            .contains("nope.gz")
    );
    let err = FashionMnist::open(
        dir.path(),
        FashionMnistSplit::Test,
        FashionMnistConfig::default(),
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("t10k-images-idx3-ubyte.gz"),
        "{err}"
    );
}

#[test]
fn samples_are_normalised_and_padded() {
    let dir = tempfile::tempdir().unwrap();
    let (images, labels) = small_pair(dir.path());
    let ds = FashionMnist::from_idx_files(&images, &labels, Some(3), FashionMnistConfig::default())
        .unwrap();
    assert_eq!((ds.len(), ds.num_classes(), ds.shape()), (3, 10, [1, 2, 2]));
    let s = ds.get(1, 0).unwrap().unwrap();
    assert_eq!(s.label, 0);
    let norm = |v: f32| (v / 255.0 - FASHION_MNIST_MEAN) / FASHION_MNIST_STD;
    assert_eq!(s.pixels, [80, 100, 120, 140]);
    let normalized = ds.normalize().apply_u8(&s.pixels);
    for (a, e) in normalized.iter().zip([80.0, 100.0, 120.0, 140.0]) {
        assert!((a - norm(e)).abs() < 1e-5);
    }
    assert!(matches!(
        ds.get(3, 0),
        Err(DataError::IndexOutOfRange { index: 3, len: 3 })
    ));

    let padded = ds.with_config(FashionMnistConfig {
        pad_to_32: true,
        ..FashionMnistConfig::default()
    });
    assert_eq!(padded.shape(), [1, 6, 6]);
    let p = padded.get(2, 0).unwrap().unwrap();
    assert_eq!(p.shape, [1, 6, 6]);
    assert_eq!(p.pixels[0], 0, "border is zero-padding");
    assert_eq!(p.pixels[2 * 6 + 2], 160, "image starts at (2, 2)");
    let p = padded.normalize().apply_u8(&p.pixels);
    assert!((p[0] - norm(0.0)).abs() < 1e-6);

    let aug = ds.with_config(FashionMnistConfig::train());
    assert_eq!(
        aug.get(0, 5).unwrap(),
        aug.get(0, 5).unwrap(),
        "same seed, same augmentation"
    );
    let distinct: std::collections::HashSet<Vec<u32>> = (0..30)
        .map(|seed| {
            aug.get(2, seed)
                .unwrap()
                .unwrap()
                .pixels
                .iter()
                .map(|&v| u32::from(v))
                .collect()
        })
        .collect();
    assert!(distinct.len() > 3, "augmentation varies with the seed");
}

#[test]
fn real_fashion_mnist_when_present() {
    let dir = fashion_mnist_dir();
    if !fashion_mnist_present(&dir) {
        eprintln!(
            "Fashion-MNIST not found in {}; run scripts/fetch_fashion_mnist.sh. Skipping.",
            dir.display()
        );
        return;
    }
    let test =
        FashionMnist::open(&dir, FashionMnistSplit::Test, FashionMnistConfig::default()).unwrap();
    assert_eq!(test.len(), 10_000);
    assert_eq!(&test.labels()[..5], &[9, 2, 1, 1, 6]);
    let train = FashionMnist::open(
        &dir,
        FashionMnistSplit::Train,
        FashionMnistConfig::default(),
    )
    .unwrap();
    assert_eq!(train.len(), 60_000);
    assert_eq!(
        train.labels()[0],
        9,
        "first training image is an ankle boot"
    );
    let mut counts = [0usize; 10];
    train.labels().iter().for_each(|&l| counts[l as usize] += 1);
    assert_eq!(counts, [6000; 10]);
    // normalised with the training statistics: mean ~0, std ~1 over many samples
    let (mut sum, mut sq, mut n) = (0.0f64, 0.0f64, 0usize);
    for i in (0..60_000).step_by(60) {
        for v in train
            .normalize()
            .apply_u8(&train.get(i, 0).unwrap().unwrap().pixels)
        {
            sum += f64::from(v);
            sq += f64::from(v) * f64::from(v);
            n += 1;
        }
    }
    let mean = sum / n as f64;
    let std = (sq / n as f64 - mean * mean).sqrt();
    assert!(
        mean.abs() < 0.05 && (std - 1.0).abs() < 0.05,
        "mean {mean}, std {std}"
    );
}
