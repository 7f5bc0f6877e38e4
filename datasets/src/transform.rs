//! Image transforms: resize → crop (+ flip) → u8 CHW; per-channel normalisation comes later,
//! on the device (or on the host with [`Normalize::apply_u8`]).
//!
//! Follows torchvision's classic ImageNet pipeline: `Resize(resize)` (shorter side, bilinear),
//! then `RandomCrop(crop)` + `RandomHorizontalFlip()` for training or `CenterCrop(crop)` for
//! evaluation, then `ToTensor()` and `Normalize(mean, std)`. The flip is a free permutation
//! of the copy the crop makes anyway, so it stays here rather than costing a device gather.
//! Random choices come from an RNG seeded per sample, so a run is reproducible.

use image::imageops::{self, FilterType};
use image::{ImageBuffer, Pixel};
use rand::Rng;

use crate::DataError;
use crate::seed::rng_for;

/// An 8-bit image in one of the pixel layouts this crate decodes to (`Rgb<u8>` or `Luma<u8>`).
pub type Image8<P> = ImageBuffer<P, Vec<u8>>;

/// ImageNet per-channel mean (RGB), as used by torchvision's pretrained models.
pub const IMAGENET_MEAN: [f32; 3] = [0.485, 0.456, 0.406];
/// ImageNet per-channel standard deviation (RGB).
pub const IMAGENET_STD: [f32; 3] = [0.229, 0.224, 0.225];

/// Per-channel normalisation `x → (x - mean[c]) / std[c]`, applied to values in `[0, 1]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Normalize {
    mean: Vec<f32>,
    std: Vec<f32>,
}

impl Normalize {
    /// One `(mean, std)` pair per channel; `std` must be positive and finite.
    pub fn new(mean: &[f32], std: &[f32]) -> Result<Self, DataError> {
        if mean.is_empty() || mean.len() != std.len() {
            return Err(DataError::config(
                "normalize",
                format!("mean {mean:?}, std {std:?}"),
                "mean and std need the same, non-zero number of channels",
            ));
        }
        if let Some(s) = std.iter().find(|s| !(s.is_finite() && **s > 0.0)) {
            return Err(DataError::config(
                "normalize.std",
                s,
                "must be positive and finite",
            ));
        }
        Ok(Normalize {
            mean: mean.to_vec(),
            std: std.to_vec(),
        })
    }

    /// ImageNet statistics for 3 (RGB) channels.
    pub fn imagenet() -> Self {
        Normalize {
            mean: IMAGENET_MEAN.to_vec(),
            std: IMAGENET_STD.to_vec(),
        }
    }

    /// No-op normalisation (mean 0, std 1) for `channels` channels: values stay in `[0, 1]`.
    pub fn identity(channels: usize) -> Self {
        Normalize {
            mean: vec![0.0; channels],
            std: vec![1.0; channels],
        }
    }

    /// Number of channels this normalisation applies to.
    pub fn channels(&self) -> usize {
        self.mean.len()
    }

    /// Per-channel means.
    pub fn mean(&self) -> &[f32] {
        &self.mean
    }

    /// Per-channel standard deviations.
    pub fn std(&self) -> &[f32] {
        &self.std
    }

    /// chw: `[channels, h*w]` u8 flattened, with `channels == self.channels()` →
    /// `(x / 255 - mean[c]) / std[c]` as f32, the same values as [`to_chw_f32`] then
    /// [`Normalize::apply`].
    pub fn apply_u8(&self, chw: &[u8]) -> Vec<f32> {
        let plane = chw.len() / self.channels();
        let mut out = Vec::with_capacity(chw.len());
        for (c, values) in chw.chunks(plane).enumerate() {
            let (mean, inv_std) = (self.mean[c], 1.0 / self.std[c]);
            out.extend(
                values
                    .iter()
                    .map(|&v| (f32::from(v) / 255.0 - mean) * inv_std),
            );
        }
        out
    }

    /// chw: `[channels, h*w]` flattened, with `channels == self.channels()`; normalised in place.
    pub fn apply(&self, chw: &mut [f32]) {
        let plane = chw.len() / self.channels();
        for (c, values) in chw.chunks_mut(plane).enumerate() {
            let (mean, inv_std) = (self.mean[c], 1.0 / self.std[c]);
            for v in values {
                *v = (*v - mean) * inv_std;
            }
        }
    }
}

/// Whether random augmentation is applied.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TransformMode {
    /// Random crop + random horizontal flip.
    Train,
    /// Centre crop, no randomness.
    #[default]
    Eval,
}

/// Resize shorter side to `resize`, crop `crop × crop`, normalise.
#[derive(Clone, Debug, PartialEq)]
pub struct ImageTransform {
    /// Target length of the shorter side (pixels), before cropping.
    pub resize: u32,
    /// Side of the square crop (pixels); at most `resize`.
    pub crop: u32,
    /// Random (train) or centre (eval) crop.
    pub mode: TransformMode,
    /// Per-channel normalisation; its channel count must match the decoded image.
    pub normalize: Normalize,
}

impl ImageTransform {
    /// torchvision's ImageNet training pipeline: resize 256, random crop 224, flip, ImageNet stats.
    pub fn imagenet_train() -> Self {
        Self::new(256, 224, TransformMode::Train, Normalize::imagenet())
    }

    /// torchvision's ImageNet evaluation pipeline: resize 256, centre crop 224, ImageNet stats.
    pub fn imagenet_eval() -> Self {
        Self::new(256, 224, TransformMode::Eval, Normalize::imagenet())
    }

    /// A transform; call [`ImageTransform::validate`] before use.
    pub fn new(resize: u32, crop: u32, mode: TransformMode, normalize: Normalize) -> Self {
        ImageTransform {
            resize,
            crop,
            mode,
            normalize,
        }
    }

    /// The same transform in another mode (e.g. the eval twin of a train transform).
    pub fn with_mode(&self, mode: TransformMode) -> Self {
        ImageTransform {
            mode,
            ..self.clone()
        }
    }

    /// Checks `0 < crop <= resize`.
    pub fn validate(&self) -> Result<(), DataError> {
        if self.crop == 0 {
            return Err(DataError::config("crop", self.crop, "must be positive"));
        }
        if self.crop > self.resize {
            return Err(DataError::config(
                "crop",
                self.crop,
                format!("must not exceed resize = {}", self.resize),
            ));
        }
        Ok(())
    }

    /// `[channels, crop, crop]` of the output for `channels`-channel input.
    pub fn output_shape(&self, channels: usize) -> [usize; 3] {
        [channels, self.crop as usize, self.crop as usize]
    }

    /// img: any size, `P` with `P::CHANNEL_COUNT == normalize.channels()` →
    /// `[channels, crop, crop]` u8, not normalised. Train mode draws crop and flip from `seed`.
    pub fn apply<P>(&self, img: &Image8<P>, seed: u64) -> Vec<u8>
    where
        P: Pixel<Subpixel = u8> + 'static,
    {
        let resized = resize_shorter_side(img, self.resize);
        let cropped = match self.mode {
            TransformMode::Eval => center_crop(&resized, self.crop),
            TransformMode::Train => {
                random_crop_flip(&resized, self.crop, self.crop, &mut rng_for(&[seed]))
            }
        };
        to_chw_u8(&cropped)
    }
}

/// Bilinear (triangle filter, antialiased when shrinking) resize so that the shorter side is
/// `size`; the longer side is `floor(size * long / short)`, as torchvision's `Resize(int)`.
/// Returns a copy unchanged when the shorter side already is `size`.
pub fn resize_shorter_side<P>(img: &Image8<P>, size: u32) -> Image8<P>
where
    P: Pixel<Subpixel = u8> + 'static,
{
    let (w, h) = img.dimensions();
    let (nw, nh) = if w <= h {
        (size, (u64::from(size) * u64::from(h) / u64::from(w)) as u32)
    } else {
        ((u64::from(size) * u64::from(w) / u64::from(h)) as u32, size)
    };
    if (nw, nh) == (w, h) {
        return img.clone();
    }
    imageops::resize(img, nw.max(1), nh.max(1), FilterType::Triangle)
}

/// The `crop × crop` window at offset `(floor((w - crop) / 2), floor((h - crop) / 2))`.
/// Panics if the image is smaller than `crop` (callers validate `crop <= resize`).
pub fn center_crop<P>(img: &Image8<P>, crop: u32) -> Image8<P>
where
    P: Pixel<Subpixel = u8> + 'static,
{
    let (w, h) = img.dimensions();
    assert!(
        w >= crop && h >= crop,
        "center_crop {crop} of a {w}x{h} image"
    );
    imageops::crop_imm(img, (w - crop) / 2, (h - crop) / 2, crop, crop).to_image()
}

/// A uniformly placed `crop_w × crop_h` window, then a horizontal flip with probability 1/2;
/// draws (x, y, flip) from `rng` in that order. Panics if the image is smaller than the crop.
pub fn random_crop_flip<P, R>(img: &Image8<P>, crop_w: u32, crop_h: u32, rng: &mut R) -> Image8<P>
where
    P: Pixel<Subpixel = u8> + 'static,
    R: Rng + ?Sized,
{
    let (w, h) = img.dimensions();
    assert!(
        w >= crop_w && h >= crop_h,
        "random crop {crop_w}x{crop_h} of a {w}x{h} image"
    );
    let x = rng.random_range(0..=w - crop_w);
    let y = rng.random_range(0..=h - crop_h);
    let flip = rng.random_bool(0.5);
    let cropped = imageops::crop_imm(img, x, y, crop_w, crop_h).to_image();
    if flip {
        imageops::flip_horizontal(&cropped)
    } else {
        cropped
    }
}

/// img: `[h, w, channels]` u8 → `[channels, h, w]` u8 (planes, as the models read them).
pub fn to_chw_u8<P>(img: &Image8<P>) -> Vec<u8>
where
    P: Pixel<Subpixel = u8>,
{
    let (w, h) = img.dimensions();
    let plane = (w * h) as usize;
    let c = usize::from(P::CHANNEL_COUNT);
    if c == 1 {
        return img.as_raw().clone();
    }
    let mut out = vec![0u8; c * plane];
    for (i, px) in img.as_raw().chunks_exact(c).enumerate() {
        for (ch, &v) in px.iter().enumerate() {
            out[ch * plane + i] = v;
        }
    }
    out
}

/// img: `[h, w, channels]` u8 → `[channels, h, w]` f32 in `[0, 1]` (`x / 255`).
pub fn to_chw_f32<P>(img: &Image8<P>) -> Vec<f32>
where
    P: Pixel<Subpixel = u8>,
{
    to_chw_u8(img)
        .into_iter()
        .map(|v| f32::from(v) / 255.0)
        .collect()
}
