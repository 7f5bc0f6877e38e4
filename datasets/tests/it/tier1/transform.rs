//! Transforms: exact pixel positions and values on synthetic images.

use burnacc_datasets::transform::{
    center_crop, random_crop_flip, resize_shorter_side, to_chw_f32, to_chw_u8,
};
use burnacc_datasets::{ImageTransform, Normalize, TransformMode};
use image::{GrayImage, Luma, Rgb, RgbImage};
use rand::SeedableRng;
use rand::rngs::StdRng;

/// w×h grey image with pixel (x, y) = 10·y + x.
fn ramp(w: u32, h: u32) -> GrayImage {
    GrayImage::from_fn(w, h, |x, y| Luma([(10 * y + x) as u8]))
}

#[test]
fn center_crop_takes_the_centre() {
    let img = ramp(6, 4);
    let c = center_crop(&img, 2);
    assert_eq!(c.dimensions(), (2, 2));
    // offset ((6 - 2) / 2, (4 - 2) / 2) = (2, 1)
    assert_eq!(c.as_raw(), &vec![12, 13, 22, 23]);
    // odd margins round down: 5x5 → 2x2 starts at (1, 1)
    assert_eq!(center_crop(&ramp(5, 5), 2).as_raw(), &vec![11, 12, 21, 22]);
}

#[test]
fn resize_shorter_side_keeps_aspect() {
    assert_eq!(resize_shorter_side(&ramp(8, 4), 2).dimensions(), (4, 2));
    assert_eq!(resize_shorter_side(&ramp(4, 9), 2).dimensions(), (2, 4)); // floor(2 * 9 / 4)
    let same = resize_shorter_side(&ramp(6, 4), 4);
    assert_eq!(
        same,
        ramp(6, 4),
        "no resampling when the shorter side already fits"
    );
    // a constant image stays constant under bilinear resampling
    let flat = GrayImage::from_pixel(40, 30, Luma([77]));
    assert!(
        resize_shorter_side(&flat, 12)
            .pixels()
            .all(|p| p.0[0] == 77)
    );
}

#[test]
fn random_crop_flip_flips_and_crops_inside() {
    let img = ramp(5, 3);
    let (mut flipped, mut kept) = (0, 0);
    for seed in 0..64 {
        let out = random_crop_flip(&img, 5, 3, &mut StdRng::seed_from_u64(seed));
        let mirrored = GrayImage::from_fn(5, 3, |x, y| *img.get_pixel(4 - x, y));
        if out == img {
            kept += 1;
        } else {
            assert_eq!(out, mirrored, "a full-size crop is the image or its mirror");
            flipped += 1;
        }
    }
    assert!(
        flipped > 10 && kept > 10,
        "flip probability 1/2: flipped {flipped}, kept {kept}"
    );

    for seed in 0..32 {
        let out = random_crop_flip(&img, 2, 2, &mut StdRng::seed_from_u64(seed));
        // the crop is a 2x2 window of the ramp, possibly mirrored: rows differ by 10
        let v = out.as_raw();
        assert_eq!(v[2], v[0] + 10);
        assert_eq!((v[1] as i32 - v[0] as i32).abs(), 1);
    }
}

#[test]
fn to_chw_is_planar_and_scaled() {
    let img = RgbImage::from_fn(2, 1, |x, _| {
        if x == 0 {
            Rgb([0, 51, 255])
        } else {
            Rgb([255, 102, 0])
        }
    });
    assert_eq!(to_chw_f32(&img), vec![0.0, 1.0, 0.2, 0.4, 1.0, 0.0]);
    assert_eq!(to_chw_u8(&img), vec![0, 255, 51, 102, 255, 0]);
}

#[test]
fn normalisation_numbers() {
    let n = Normalize::imagenet();
    let mut v = vec![0.485, 1.0, 0.456, 0.0, 0.406, 0.5];
    n.apply(&mut v);
    let expect = [
        0.0,
        (1.0 - 0.485) / 0.229,
        0.0,
        -0.456 / 0.224,
        0.0,
        (0.5 - 0.406) / 0.225,
    ];
    for (a, b) in v.iter().zip(expect) {
        assert!((a - b).abs() < 1e-6, "{a} vs {b}");
    }
    let grey = Normalize::new(&[0.5], &[0.25]).unwrap();
    let mut g = vec![0.0, 1.0];
    grey.apply(&mut g);
    assert_eq!(g, vec![-2.0, 2.0]);
    // From u8 pixels: the same numbers as scaling to [0, 1] and then normalising.
    let rgb: Vec<u8> = (0..=255).chain((0..=255).rev()).chain(0..=255).collect();
    let mut scaled: Vec<f32> = rgb.iter().map(|&v| f32::from(v) / 255.0).collect();
    n.apply(&mut scaled);
    assert_eq!(n.apply_u8(&rgb), scaled);
    assert!(Normalize::new(&[0.5, 0.5], &[0.2]).is_err());
    let err = Normalize::new(&[0.5], &[0.0]).unwrap_err().to_string();
    assert!(err.contains("normalize.std") && err.contains('0'), "{err}");
}

#[test]
fn eval_transform_end_to_end() {
    // 4x4 RGB, shorter side already 4: centre 2x2 crop of known pixels, then normalised.
    let img = RgbImage::from_fn(4, 4, |x, y| Rgb([(x * 60) as u8, (y * 60) as u8, 255]));
    let t = ImageTransform::new(4, 2, TransformMode::Eval, Normalize::imagenet());
    t.validate().unwrap();
    let pixels = t.apply(&img, 123);
    assert_eq!(
        pixels,
        [60, 120, 60, 120, 60, 60, 120, 120, 255, 255, 255, 255]
    );
    let out = t.normalize.apply_u8(&pixels);
    assert_eq!(out.len(), 3 * 2 * 2);
    let r = |v: f32| (v / 255.0 - 0.485) / 0.229;
    let g = |v: f32| (v / 255.0 - 0.456) / 0.224;
    let b = (1.0 - 0.406) / 0.225;
    let expect = [
        r(60.0),
        r(120.0),
        r(60.0),
        r(120.0),
        g(60.0),
        g(60.0),
        g(120.0),
        g(120.0),
        b,
        b,
        b,
        b,
    ];
    for (a, e) in out.iter().zip(expect) {
        assert!((a - e).abs() < 1e-5, "{a} vs {e}");
    }
    assert_eq!(t.apply(&img, 1), t.apply(&img, 2), "eval ignores the seed");
}

#[test]
fn train_transform_is_reproducible_per_seed() {
    let img = RgbImage::from_fn(12, 10, |x, y| {
        Rgb([(x * 20) as u8, (y * 25) as u8, ((x + y) * 10) as u8])
    });
    let t = ImageTransform::new(10, 6, TransformMode::Train, Normalize::imagenet());
    assert_eq!(t.apply(&img, 7), t.apply(&img, 7));
    let distinct: std::collections::HashSet<Vec<u32>> = (0..20)
        .map(|s| t.apply(&img, s).iter().map(|&v| u32::from(v)).collect())
        .collect();
    assert!(
        distinct.len() > 5,
        "random crops vary with the seed ({} distinct)",
        distinct.len()
    );
}

#[test]
fn transform_validation() {
    let bad = ImageTransform::new(8, 10, TransformMode::Eval, Normalize::imagenet());
    let msg = bad.validate().unwrap_err().to_string();
    assert!(
        msg.contains("crop = 10") && msg.contains("resize = 8"),
        "{msg}"
    );
    assert!(
        ImageTransform::new(8, 0, TransformMode::Eval, Normalize::imagenet())
            .validate()
            .is_err()
    );
    ImageTransform::imagenet_train().validate().unwrap();
    assert_eq!(
        ImageTransform::imagenet_eval().output_shape(3),
        [3, 224, 224]
    );
}
