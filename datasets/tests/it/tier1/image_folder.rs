//! ImageFolder over a temporary tree with JPEG and PNG files (RGB, RGBA, 16-bit, grey),
//! discovery rules, errors, and the corrupt-file policies.

use std::path::Path;
use std::sync::Arc;

use burnacc_datasets::{
    CorruptPolicy, DataError, ImageDataset, ImageFolder, ImageFolderConfig, ImageTransform, Loader,
    LoaderConfig, Normalize, Subset, TransformMode, stratified_split,
};
use image::{DynamicImage, ImageBuffer, Luma, Rgb, RgbImage, Rgba, RgbaImage};

fn eval16() -> ImageFolderConfig {
    ImageFolderConfig::rgb(ImageTransform::new(
        16,
        16,
        TransformMode::Eval,
        Normalize::identity(3),
    ))
}

/// cat: a.jpg (RGB), b.PNG (RGBA); dog: c.png (16-bit RGB), d.png (grey), e.JPEG;
/// plus files and folders that must be ignored. All images 16x16, solid colours.
fn make_tree(root: &Path) {
    let cat = root.join("cat");
    let dog = root.join("dog");
    std::fs::create_dir_all(&cat).unwrap();
    std::fs::create_dir_all(&dog).unwrap();
    RgbImage::from_pixel(16, 16, Rgb([200, 40, 40]))
        .save(cat.join("a.jpg"))
        .unwrap();
    RgbaImage::from_pixel(16, 16, Rgba([10, 20, 30, 128]))
        .save(cat.join("b.PNG"))
        .unwrap();
    let deep: ImageBuffer<Rgb<u16>, Vec<u16>> =
        ImageBuffer::from_pixel(16, 16, Rgb([65535, 0, 32896]));
    DynamicImage::ImageRgb16(deep)
        .save(dog.join("c.png"))
        .unwrap();
    ImageBuffer::<Luma<u8>, Vec<u8>>::from_pixel(16, 16, Luma([128]))
        .save(dog.join("d.png"))
        .unwrap();
    RgbImage::from_pixel(24, 16, Rgb([40, 200, 40]))
        .save(dog.join("e.JPEG"))
        .unwrap();
    std::fs::write(dog.join("notes.txt"), "not an image").unwrap();
    std::fs::write(root.join("README"), "top-level file, not a class").unwrap();
    std::fs::create_dir_all(root.join(".cache")).unwrap();
}

fn pixel(sample: &[u8], plane: usize, c: usize) -> u8 {
    sample[c * plane + plane / 2]
}

#[test]
fn discovers_classes_and_files_sorted() {
    let dir = tempfile::tempdir().unwrap();
    make_tree(dir.path());
    let ds = ImageFolder::open(dir.path(), eval16()).unwrap();
    assert_eq!(ds.classes(), ["cat", "dog"]);
    let names: Vec<_> = ds
        .samples()
        .iter()
        .map(|(p, l)| (p.file_name().unwrap().to_str().unwrap(), *l))
        .collect();
    assert_eq!(
        names,
        [
            ("a.jpg", 0),
            ("b.PNG", 0),
            ("c.png", 1),
            ("d.png", 1),
            ("e.JPEG", 1)
        ]
    );
    assert_eq!(
        (ds.len(), ds.num_classes(), ds.shape()),
        (5, 2, [3, 16, 16])
    );
    assert_eq!(ds.labels(), vec![0, 0, 1, 1, 1]);
}

#[test]
fn decodes_every_format_to_rgb() {
    let dir = tempfile::tempdir().unwrap();
    make_tree(dir.path());
    let ds = ImageFolder::open(dir.path(), eval16()).unwrap();
    let plane = 16 * 16;
    let get = |i| ds.get(i, 0).unwrap().unwrap();
    let rgb = |i| {
        let s = get(i);
        assert_eq!(s.shape, [3, 16, 16]);
        assert_eq!(s.pixels.len(), 3 * plane);
        [0, 1, 2].map(|c| i32::from(pixel(&s.pixels, plane, c)))
    };
    let close =
        |a: [i32; 3], b: [i32; 3], tol: i32| a.iter().zip(b).all(|(x, y)| (x - y).abs() <= tol);
    assert!(close(rgb(0), [200, 40, 40], 4), "jpeg {:?}", rgb(0));
    assert_eq!(rgb(1), [10, 20, 30], "RGBA drops alpha");
    assert_eq!(rgb(2), [255, 0, 128], "16-bit scaled to 8-bit");
    assert_eq!(rgb(3), [128, 128, 128], "grey replicated to RGB");
    // 24x16 resized to shorter side 16 (already), centre-cropped to 16x16
    assert!(close(rgb(4), [40, 200, 40], 4), "jpeg {:?}", rgb(4));
    assert_eq!(get(4).label, 1);
}

#[test]
fn one_channel_decodes_to_grey() {
    let dir = tempfile::tempdir().unwrap();
    make_tree(dir.path());
    let t = ImageTransform::new(
        8,
        8,
        TransformMode::Eval,
        Normalize::new(&[0.5], &[0.5]).unwrap(),
    );
    let cfg = ImageFolderConfig {
        channels: 1,
        transform: t,
        corrupt: CorruptPolicy::Fail,
    };
    let ds = ImageFolder::open(dir.path(), cfg).unwrap();
    assert_eq!(ds.shape(), [1, 8, 8]);
    let s = ds.get(3, 0).unwrap().unwrap(); // grey 128, resized 16 → 8 (constant stays constant)
    assert_eq!(s.pixels, [128; 64]);
    assert!(
        ds.normalize()
            .apply_u8(&s.pixels)
            .iter()
            .all(|&v| (v - (128.0 / 255.0 - 0.5) / 0.5).abs() < 1e-6)
    );
    // 3-channel normalisation with 1 channel is refused
    let bad = ImageFolderConfig {
        channels: 1,
        ..eval16()
    };
    let msg = ImageFolder::open(dir.path(), bad).unwrap_err().to_string();
    assert!(msg.contains("normalize"), "{msg}");
}

#[test]
fn structural_errors_name_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("does-not-exist");
    let err = ImageFolder::open(&missing, eval16()).unwrap_err();
    assert!(matches!(err, DataError::MissingRoot { .. }));
    assert!(err.to_string().contains("does-not-exist"), "{err}");

    let flat = dir.path().join("flat");
    std::fs::create_dir(&flat).unwrap();
    std::fs::write(flat.join("x.jpg"), b"").unwrap();
    let err = ImageFolder::open(&flat, eval16()).unwrap_err();
    assert!(
        matches!(err, DataError::NoClasses { .. }) && err.to_string().contains("flat"),
        "{err}"
    );

    let tree = dir.path().join("tree");
    make_tree(&tree);
    std::fs::create_dir(tree.join("empty_class")).unwrap();
    std::fs::write(tree.join("empty_class").join("readme.txt"), "").unwrap();
    let err = ImageFolder::open(&tree, eval16()).unwrap_err();
    assert!(matches!(err, DataError::EmptyClass { .. }), "{err}");
    assert!(
        err.to_string()
            .contains(&tree.join("empty_class").display().to_string()),
        "{err}"
    );
}

fn tree_with_corrupt_file(root: &Path) -> std::path::PathBuf {
    make_tree(root);
    let bad = root.join("cat").join("broken.jpg");
    let mut bytes = std::fs::read(root.join("cat").join("a.jpg")).unwrap();
    bytes.truncate(bytes.len() / 3);
    std::fs::write(&bad, bytes).unwrap();
    bad
}

#[test]
fn corrupt_file_fails_with_its_path() {
    let dir = tempfile::tempdir().unwrap();
    let bad = tree_with_corrupt_file(dir.path());
    let ds = ImageFolder::open(dir.path(), eval16()).unwrap();
    let idx = ds.samples().iter().position(|(p, _)| *p == bad).unwrap();
    let err = ds.get(idx, 0).unwrap_err();
    assert!(matches!(err, DataError::Decode { .. }), "{err:?}");
    assert!(
        err.to_string().contains(&bad.display().to_string()),
        "{err}"
    );

    // through the loader, the error arrives in its batch's place and ends the epoch
    let cfg = LoaderConfig {
        batch_size: 2,
        shuffle: false,
        workers: 2,
        ..LoaderConfig::default()
    };
    let loader = Loader::new(Arc::new(ds), cfg).unwrap();
    let results: Vec<_> = loader.epoch(0).collect();
    // order: a.jpg, b.PNG | broken.jpg, … → first batch fine, second fails, then nothing
    assert_eq!(results.len(), 2);
    assert!(results[0].is_ok());
    assert!(
        results[1]
            .as_ref()
            .unwrap_err()
            .to_string()
            .contains("broken.jpg")
    );
}

#[test]
fn corrupt_file_is_skipped_and_counted_once() {
    let dir = tempfile::tempdir().unwrap();
    let bad = tree_with_corrupt_file(dir.path());
    let cfg = ImageFolderConfig {
        corrupt: CorruptPolicy::Skip,
        ..eval16()
    };
    let ds = ImageFolder::open(dir.path(), cfg).unwrap();
    assert_eq!(ds.len(), 6);
    let idx = ds.samples().iter().position(|(p, _)| *p == bad).unwrap();
    assert!(ds.get(idx, 0).unwrap().is_none());
    assert_eq!(ds.skipped(), 1);

    let ds = Arc::new(ds);
    let cfg = LoaderConfig {
        batch_size: 3,
        shuffle: false,
        workers: 2,
        ..LoaderConfig::default()
    };
    let loader = Loader::new(ds.clone(), cfg).unwrap();
    let batches: Vec<_> = loader.epoch(0).map(Result::unwrap).collect();
    let sizes: Vec<_> = batches.iter().map(|b| b.len()).collect();
    assert_eq!(sizes, [2, 3], "the batch holding broken.jpg is one shorter");
    assert_eq!(batches[0].shape, [2, 3, 16, 16]);
    assert_eq!(batches[0].pixels.len(), 2 * 3 * 16 * 16);
    // Counted per file, not per read: the same file again in epoch 0 and in epoch 1.
    assert_eq!(ds.skipped(), 1);
    let again: Vec<_> = loader.epoch(1).map(Result::unwrap).collect();
    assert_eq!(again.iter().map(|b| b.len()).sum::<usize>(), 5);
    assert_eq!(ds.skipped(), 1, "a file skipped in every epoch is one file");
}

#[test]
fn holdout_split_with_eval_view() {
    let dir = tempfile::tempdir().unwrap();
    for class in ["a", "b", "c"] {
        std::fs::create_dir(dir.path().join(class)).unwrap();
        for i in 0..10 {
            RgbImage::from_pixel(20, 20, Rgb([i * 20, 0, 0]))
                .save(dir.path().join(class).join(format!("{i}.png")))
                .unwrap();
        }
    }
    let train_t = ImageTransform::new(20, 16, TransformMode::Train, Normalize::imagenet());
    let folder = ImageFolder::open(dir.path(), ImageFolderConfig::rgb(train_t.clone())).unwrap();
    let eval = folder
        .with_config(ImageFolderConfig::rgb(
            train_t.with_mode(TransformMode::Eval),
        ))
        .unwrap();
    let split = stratified_split(&folder.labels(), 0.2, 7).unwrap();
    assert_eq!((split.train.len(), split.val.len()), (24, 6));
    let labels = folder.labels();
    for c in 0..3 {
        assert_eq!(
            split.val.iter().filter(|&&i| labels[i] == c).count(),
            2,
            "2 per class held out"
        );
    }
    let mut all: Vec<_> = split.train.iter().chain(&split.val).copied().collect();
    all.sort_unstable();
    assert_eq!(all, (0..30).collect::<Vec<_>>());
    assert_eq!(
        split,
        stratified_split(&labels, 0.2, 7).unwrap(),
        "deterministic"
    );
    assert_ne!(
        split.val,
        stratified_split(&labels, 0.2, 8).unwrap().val,
        "depends on the seed"
    );
    assert!(stratified_split(&labels, 1.0, 0).is_err());

    let val = Subset::new(Arc::new(eval), split.val.clone()).unwrap();
    assert_eq!(
        (val.len(), val.num_classes(), val.shape()),
        (6, 3, [3, 16, 16])
    );
    assert_eq!(
        val.get(0, 1).unwrap(),
        val.get(0, 2).unwrap(),
        "eval view: no augmentation"
    );
    assert_eq!(val.get(0, 0).unwrap().unwrap().label, labels[split.val[0]]);
    assert!(Subset::new(Arc::new(folder), vec![30]).is_err());
}
