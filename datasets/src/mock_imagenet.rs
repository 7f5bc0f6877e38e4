//! Mock ImageNet: a generated ImageFolder tree of JPEG files whose classes can be learned.
//!
//! Layout: `dir/n00000000/n00000000_00000.JPEG`, … (ImageNet-style names), plus the manifest
//! [`MANIFEST_FILE`] holding the [`MockSpec`]. Each class has its own smooth pattern —
//! stripes of two class colours at a class angle and frequency over a class brightness
//! gradient — and each image shifts the stripes' phase and the gradient, jitters angle,
//! frequency and brightness, and adds pixel noise. A small CNN separates the classes well
//! above chance within a few hundred steps, so tests can check that the loss goes down.
//!
//! Everything is drawn from `spec.seed`: the same spec writes the same bytes. The tree is
//! written into a temporary sibling folder and renamed into place, so a reader sees either
//! no tree or a complete one; a complete tree with the same spec is reused.

use std::f32::consts::PI;
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use image::RgbImage;
use image::codecs::jpeg::JpegEncoder;
use rand::Rng;

use crate::DataError;
use crate::seed::{rng_for, tag};

/// Manifest file at the tree's root: written last, it marks the tree as complete.
pub const MANIFEST_FILE: &str = "burnacc-mock-imagenet.txt";
/// Version of the image generator; bumping it invalidates cached trees.
const GENERATOR_VERSION: u32 = 1;

/// What to generate.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MockSpec {
    /// Number of classes (≥ 1).
    pub classes: usize,
    /// Images per class (≥ 1).
    pub images_per_class: usize,
    /// Side of the square images, pixels (8 ..= 4096).
    pub image_size: u32,
    /// Seed of every random choice.
    pub seed: u64,
    /// JPEG quality, 1 ..= 100.
    pub quality: u8,
}

impl Default for MockSpec {
    /// 10 classes × 64 images of 64×64, seed 0, quality 90 (about 1.5 MB).
    fn default() -> Self {
        MockSpec {
            classes: 10,
            images_per_class: 64,
            image_size: 64,
            seed: 0,
            quality: 90,
        }
    }
}

impl MockSpec {
    /// Checks the ranges documented on the fields.
    pub fn validate(&self) -> Result<(), DataError> {
        if self.classes == 0 {
            return Err(DataError::config(
                "classes",
                self.classes,
                "must be at least 1",
            ));
        }
        if self.images_per_class == 0 {
            return Err(DataError::config(
                "images_per_class",
                self.images_per_class,
                "must be at least 1",
            ));
        }
        if !(8..=4096).contains(&self.image_size) {
            return Err(DataError::config(
                "image_size",
                self.image_size,
                "must be in 8..=4096",
            ));
        }
        if !(1..=100).contains(&self.quality) {
            return Err(DataError::config(
                "quality",
                self.quality,
                "must be in 1..=100",
            ));
        }
        Ok(())
    }

    /// The manifest text: generator version and every field, one `key = value` per line.
    pub fn manifest(&self) -> String {
        format!(
            "burnacc mock ImageNet\ngenerator = {GENERATOR_VERSION}\nclasses = {}\nimages_per_class = {}\n\
             image_size = {}\nseed = {}\nquality = {}\n",
            self.classes, self.images_per_class, self.image_size, self.seed, self.quality
        )
    }

    /// 16 hex digits identifying the spec (FNV-1a 64 of [`MockSpec::manifest`]); stable
    /// across runs and platforms.
    pub fn hash_hex(&self) -> String {
        let h = self
            .manifest()
            .bytes()
            .fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
            });
        format!("{h:016x}")
    }
}

/// Whether [`generate_mock_imagenet`] wrote the tree or found it complete.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MockOutcome {
    /// The tree was written now.
    Generated,
    /// A complete tree with the same spec was already there.
    Reused,
}

/// `$BURNACC_CACHE/mock-imagenet-<spec hash>`, else `~/.cache/burnacc/mock-imagenet-<spec hash>`.
pub fn default_mock_dir(spec: &MockSpec) -> PathBuf {
    crate::paths::cache_dir().join(format!("mock-imagenet-{}", spec.hash_hex()))
}

/// ImageNet-style folder name of class `class`: `n00000000`, `n00000001`, …
pub fn mock_class_name(class: usize) -> String {
    format!("n{class:08}")
}

/// File name of image `index` of class `class`: `n00000003_00012.JPEG`.
pub fn mock_file_name(class: usize, index: usize) -> String {
    format!("{}_{index:05}.JPEG", mock_class_name(class))
}

/// HSV (all in `[0, 1]`) → RGB in `[0, 1]`.
fn hsv(h: f32, s: f32, v: f32) -> [f32; 3] {
    let h6 = (h.rem_euclid(1.0)) * 6.0;
    let f = h6 - h6.floor();
    let (p, q, t) = (v * (1.0 - s), v * (1.0 - s * f), v * (1.0 - s * (1.0 - f)));
    match h6 as u32 % 6 {
        0 => [v, t, p],
        1 => [q, v, p],
        2 => [p, v, t],
        3 => [p, q, v],
        4 => [t, p, v],
        _ => [v, p, q],
    }
}

/// The pattern parameters shared by every image of a class.
struct ClassPattern {
    angle: f32,
    cycles: f32,
    fg: [f32; 3],
    bg: [f32; 3],
    gradient_angle: f32,
}

fn class_pattern(seed: u64, class: usize, classes: usize) -> ClassPattern {
    let mut rng = rng_for(&[seed, tag::MOCK_CLASS, class as u64]);
    // Low-discrepancy hue and frequency sequences keep neighbouring classes apart.
    let hue = (class as f32 * 0.618_034 + rng.random::<f32>() * 0.1).fract();
    let cycles = 1.5 + 4.5 * (class as f32 * 0.381_966 + rng.random::<f32>() * 0.05).fract();
    ClassPattern {
        angle: PI * (class as f32 + rng.random_range(-0.2..0.2)) / classes as f32,
        cycles,
        fg: hsv(hue, 0.85, 0.95),
        bg: hsv(hue + 0.45, 0.6, 0.3),
        gradient_angle: rng.random::<f32>() * 2.0 * PI,
    }
}

/// Image `index` of class `class` under `spec`: `[size, size]` RGB8, deterministic.
pub fn render_mock_image(spec: &MockSpec, class: usize, index: usize) -> RgbImage {
    let p = class_pattern(spec.seed, class, spec.classes);
    let mut rng = rng_for(&[spec.seed, tag::MOCK_IMAGE, class as u64, index as u64]);
    let phase = rng.random::<f32>() * 2.0 * PI;
    let angle = p.angle + rng.random_range(-0.06..0.06);
    let cycles = p.cycles * rng.random_range(0.93..1.07);
    let (sx, sy) = (
        rng.random_range(-0.2..0.2f32),
        rng.random_range(-0.2..0.2f32),
    );
    let brightness = rng.random_range(0.85..1.15f32);
    let (ca, sa) = (angle.cos(), angle.sin());
    let (cg, sg) = (p.gradient_angle.cos(), p.gradient_angle.sin());
    let n = spec.image_size;
    RgbImage::from_fn(n, n, |x, y| {
        let u = x as f32 / n as f32 - 0.5 + sx;
        let v = y as f32 / n as f32 - 0.5 + sy;
        let stripe = 0.5 + 0.5 * (2.0 * PI * cycles * (u * ca + v * sa) + phase).sin();
        let shade = (0.75 + 0.5 * (u * cg + v * sg)).clamp(0.4, 1.1) * brightness;
        let mut px = [0u8; 3];
        for (c, out) in px.iter_mut().enumerate() {
            let base = p.bg[c] + (p.fg[c] - p.bg[c]) * stripe;
            let noisy = base * shade + rng.random_range(-0.08..0.08f32);
            *out = (noisy.clamp(0.0, 1.0) * 255.0).round() as u8;
        }
        image::Rgb(px)
    })
}

/// Whether `dir` holds a complete tree for `spec`: its manifest matches and every class
/// folder holds `images_per_class` `.JPEG` files.
pub fn is_complete_mock_tree(dir: &Path, spec: &MockSpec) -> bool {
    let manifest_ok =
        std::fs::read_to_string(dir.join(MANIFEST_FILE)).is_ok_and(|m| m == spec.manifest());
    manifest_ok
        && (0..spec.classes).all(|c| {
            std::fs::read_dir(dir.join(mock_class_name(c))).is_ok_and(|entries| {
                entries
                    .filter_map(Result::ok)
                    .filter(|e| e.file_name().to_string_lossy().ends_with(".JPEG"))
                    .count()
                    == spec.images_per_class
            })
        })
}

/// Writes the images of the classes `class ≡ worker (mod workers)` under `root`.
fn write_classes(
    root: &Path,
    spec: &MockSpec,
    worker: usize,
    workers: usize,
) -> Result<(), DataError> {
    for class in (worker..spec.classes).step_by(workers) {
        let class_dir = root.join(mock_class_name(class));
        std::fs::create_dir_all(&class_dir).map_err(|e| DataError::io(&class_dir, e))?;
        for index in 0..spec.images_per_class {
            let path = class_dir.join(mock_file_name(class, index));
            let img = render_mock_image(spec, class, index);
            let file = File::create(&path).map_err(|e| DataError::io(&path, e))?;
            JpegEncoder::new_with_quality(BufWriter::new(file), spec.quality)
                .encode_image(&img)
                .map_err(|source| DataError::Encode {
                    path: path.clone(),
                    source,
                })?;
        }
    }
    Ok(())
}

/// Writes the whole tree into `tmp` (classes spread over the available cores), manifest last.
fn write_tree(tmp: &Path, spec: &MockSpec) -> Result<(), DataError> {
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(spec.classes);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..workers)
            .map(|w| s.spawn(move || write_classes(tmp, spec, w, workers)))
            .collect();
        handles
            .into_iter()
            .try_for_each(|h| h.join().expect("mock image writer panicked"))
    })?;
    let manifest = tmp.join(MANIFEST_FILE);
    std::fs::write(&manifest, spec.manifest()).map_err(|e| DataError::io(&manifest, e))
}

/// Removes `dir` if it is a (possibly stale) mock tree or empty; refuses anything else.
fn remove_old_tree(dir: &Path) -> Result<(), DataError> {
    let is_ours = dir.join(MANIFEST_FILE).is_file();
    let is_empty = std::fs::read_dir(dir)
        .map_err(|e| DataError::io(dir, e))?
        .next()
        .is_none();
    if !(is_ours || is_empty) {
        return Err(DataError::NotAMockTree {
            path: dir.to_path_buf(),
        });
    }
    std::fs::remove_dir_all(dir).map_err(|e| DataError::io(dir, e))
}

/// Makes `dir` a complete mock ImageNet tree for `spec`, reusing it when it already is one.
/// An existing tree with another spec or missing files is replaced; a non-empty folder
/// without a manifest is never deleted ([`DataError::NotAMockTree`]).
pub fn generate_mock_imagenet(dir: &Path, spec: &MockSpec) -> Result<MockOutcome, DataError> {
    spec.validate()?;
    if is_complete_mock_tree(dir, spec) {
        return Ok(MockOutcome::Reused);
    }
    let parent = dir
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).map_err(|e| DataError::io(parent, e))?;
    let name = dir
        .file_name()
        .map_or_else(|| "mock".into(), |n| n.to_string_lossy().into_owned());
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let tmp = parent.join(format!(".{name}.tmp-{}-{nanos}", std::process::id()));
    std::fs::create_dir(&tmp).map_err(|e| DataError::io(&tmp, e))?;

    let result = write_tree(&tmp, spec).and_then(|()| {
        // Processes of one data-parallel run generate the same tree at once: the first to
        // finish wins, and the others keep its tree (which the first may already be reading).
        if is_complete_mock_tree(dir, spec) {
            return Ok(false);
        }
        if dir.exists() {
            remove_old_tree(dir)?;
        }
        std::fs::rename(&tmp, dir).map_err(|e| DataError::io(dir, e))?;
        Ok(true)
    });
    match result {
        Ok(true) => Ok(MockOutcome::Generated),
        Ok(false) => {
            let _ = std::fs::remove_dir_all(&tmp);
            Ok(MockOutcome::Reused)
        }
        Err(e) => {
            let _ = std::fs::remove_dir_all(&tmp);
            // Another process may have finished the same tree first.
            if is_complete_mock_tree(dir, spec) {
                Ok(MockOutcome::Reused)
            } else {
                Err(e)
            }
        }
    }
}
