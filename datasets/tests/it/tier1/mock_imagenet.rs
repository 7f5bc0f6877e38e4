//! Mock ImageNet: determinism, reuse, regeneration, safety, and that classes are learnable.

use std::path::Path;

use burnacc_datasets::{
    DataError, ImageDataset, ImageFolder, ImageFolderConfig, ImageTransform, MANIFEST_FILE,
    MockOutcome, MockSpec, Normalize, TransformMode, default_mock_dir, generate_mock_imagenet,
    mock_class_name, mock_file_name, render_mock_image,
};

fn small() -> MockSpec {
    MockSpec {
        classes: 3,
        images_per_class: 4,
        image_size: 32,
        seed: 11,
        quality: 85,
    }
}

/// Every file under `dir` (relative path, bytes), sorted.
fn tree_bytes(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for class in std::fs::read_dir(dir).unwrap() {
        let class = class.unwrap().path();
        if class.is_dir() {
            for f in std::fs::read_dir(&class).unwrap() {
                let f = f.unwrap().path();
                out.push((
                    f.strip_prefix(dir).unwrap().display().to_string(),
                    std::fs::read(&f).unwrap(),
                ));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn same_seed_same_bytes() {
    let root = tempfile::tempdir().unwrap();
    let (a, b, c) = (
        root.path().join("a"),
        root.path().join("b"),
        root.path().join("c"),
    );
    assert_eq!(
        generate_mock_imagenet(&a, &small()).unwrap(),
        MockOutcome::Generated
    );
    assert_eq!(
        generate_mock_imagenet(&b, &small()).unwrap(),
        MockOutcome::Generated
    );
    let (ta, tb) = (tree_bytes(&a), tree_bytes(&b));
    assert_eq!(ta.len(), 12);
    assert_eq!(ta, tb);
    assert_eq!(
        ta[0].0,
        format!("{}/{}", mock_class_name(0), mock_file_name(0, 0))
    );
    assert_eq!(mock_class_name(0), "n00000000");

    generate_mock_imagenet(
        &c,
        &MockSpec {
            seed: 12,
            ..small()
        },
    )
    .unwrap();
    assert_ne!(tree_bytes(&c), ta, "another seed gives other images");
    // no temporary folders are left behind
    let mut names: Vec<_> = std::fs::read_dir(root.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    assert_eq!(names, ["a", "b", "c"]);
}

#[test]
fn complete_tree_is_reused_others_regenerated() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("mock");
    generate_mock_imagenet(&dir, &small()).unwrap();
    let first = tree_bytes(&dir);
    let marker = dir.join("n00000000").join("kept-if-reused");
    std::fs::write(&marker, "x").unwrap();
    assert_eq!(
        generate_mock_imagenet(&dir, &small()).unwrap(),
        MockOutcome::Reused
    );
    assert!(marker.exists(), "a reused tree is left untouched");

    // a missing image makes the tree incomplete: regenerated to the same bytes
    std::fs::remove_file(dir.join("n00000002").join(mock_file_name(2, 3))).unwrap();
    assert_eq!(
        generate_mock_imagenet(&dir, &small()).unwrap(),
        MockOutcome::Generated
    );
    assert!(!marker.exists());
    assert_eq!(tree_bytes(&dir), first);

    // another spec in the same folder replaces it
    let bigger = MockSpec {
        images_per_class: 5,
        ..small()
    };
    assert_eq!(
        generate_mock_imagenet(&dir, &bigger).unwrap(),
        MockOutcome::Generated
    );
    assert_eq!(tree_bytes(&dir).len(), 15);
    assert_eq!(
        std::fs::read_to_string(dir.join(MANIFEST_FILE)).unwrap(),
        bigger.manifest()
    );
}

#[test]
fn foreign_folder_is_never_deleted() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("photos");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("precious.jpg"), "user data").unwrap();
    let err = generate_mock_imagenet(&dir, &small()).unwrap_err();
    assert!(
        matches!(err, DataError::NotAMockTree { .. }) && err.to_string().contains("photos"),
        "{err}"
    );
    assert!(dir.join("precious.jpg").exists());
    assert_eq!(
        std::fs::read_dir(root.path()).unwrap().count(),
        1,
        "temporary folder removed"
    );
}

#[test]
fn spec_validation_and_default_dir() {
    let root = tempfile::tempdir().unwrap();
    let err = generate_mock_imagenet(
        root.path(),
        &MockSpec {
            quality: 0,
            ..small()
        },
    )
    .unwrap_err();
    assert!(err.to_string().contains("quality = 0"), "{err}");
    assert!(
        generate_mock_imagenet(
            root.path(),
            &MockSpec {
                classes: 0,
                ..small()
            }
        )
        .is_err()
    );

    let d = default_mock_dir(&small());
    let name = d.file_name().unwrap().to_str().unwrap().to_string();
    assert_eq!(name, format!("mock-imagenet-{}", small().hash_hex()));
    assert_eq!(small().hash_hex().len(), 16);
    assert_ne!(
        default_mock_dir(&MockSpec {
            seed: 12,
            ..small()
        }),
        d
    );
}

#[test]
fn tree_opens_as_image_folder() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("mock");
    generate_mock_imagenet(&dir, &small()).unwrap();
    let t = ImageTransform::new(32, 28, TransformMode::Train, Normalize::imagenet());
    let ds = ImageFolder::open(&dir, ImageFolderConfig::rgb(t)).unwrap();
    assert_eq!(
        (ds.len(), ds.num_classes(), ds.shape()),
        (12, 3, [3, 28, 28])
    );
    assert_eq!(ds.classes(), ["n00000000", "n00000001", "n00000002"]);
    let s = ds.get(5, 3).unwrap().unwrap();
    assert_eq!(s.label, 1);
    assert!(
        ds.normalize()
            .apply_u8(&s.pixels)
            .iter()
            .all(|v| v.is_finite() && (-2.2..=2.7).contains(v))
    );
}

/// 4x4 average-pooled RGB of an image, a 48-dimensional feature.
fn pooled(img: &image::RgbImage) -> Vec<f32> {
    let cell = img.width() / 4;
    let mut f = vec![0.0f32; 48];
    for (x, y, p) in img.enumerate_pixels() {
        let k = ((y / cell).min(3) * 4 + (x / cell).min(3)) as usize;
        for c in 0..3 {
            f[k * 3 + c] += f32::from(p.0[c]) / (cell * cell) as f32;
        }
    }
    f
}

#[test]
fn classes_are_separable_but_images_vary() {
    // A nearest-centroid classifier on coarse colour features, fitted on 10 images per class
    // and tested on 10 others, must beat chance (1/12) by far: the classes carry signal.
    let spec = MockSpec {
        classes: 12,
        images_per_class: 20,
        image_size: 32,
        seed: 3,
        quality: 90,
    };
    let feats: Vec<Vec<Vec<f32>>> = (0..spec.classes)
        .map(|c| {
            (0..spec.images_per_class)
                .map(|i| pooled(&render_mock_image(&spec, c, i)))
                .collect()
        })
        .collect();
    let centroids: Vec<Vec<f32>> = feats
        .iter()
        .map(|imgs| {
            (0..48)
                .map(|k| imgs[..10].iter().map(|f| f[k]).sum::<f32>() / 10.0)
                .collect()
        })
        .collect();
    let mut correct = 0;
    for (c, imgs) in feats.iter().enumerate() {
        for f in &imgs[10..] {
            let dist = |m: &Vec<f32>| m.iter().zip(f).map(|(a, b)| (a - b).powi(2)).sum::<f32>();
            let best = (0..spec.classes)
                .min_by(|&a, &b| dist(&centroids[a]).total_cmp(&dist(&centroids[b])))
                .unwrap();
            correct += usize::from(best == c);
        }
    }
    let accuracy = correct as f32 / 120.0;
    assert!(accuracy > 0.5, "nearest-centroid accuracy {accuracy}");
    assert_ne!(
        render_mock_image(&spec, 0, 0),
        render_mock_image(&spec, 0, 1),
        "images of a class differ"
    );
}
