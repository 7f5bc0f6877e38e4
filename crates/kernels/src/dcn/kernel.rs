//! The CubeCL kernel of burnacc's deformable-convolution backward: one unit per (batch, offset
//! group, kernel tap, output position), which samples the input once per channel and from that
//! one sample produces every gradient that depends on it.
//!
//! Burn's backward runs three kernels over the same samples (the offset-and-mask gradient, the
//! input gradient by atomics, and a fresh im2col for the weight gradient), each interpolating
//! the input again. Here one pass writes the offset and mask gradients, adds the input
//! gradient (atomically: taps of different positions land on the same pixels) and writes the
//! modulated columns that the weight gradient's matrix product reads.
//!
//! Bilinear sampling follows torchvision's `deform_conv2d`: a corner outside the image reads
//! 0, each of the four corners is checked on its own. Everything is computed in f32.

use burn::cubecl;
use cubecl::prelude::*;

/// How a unit adds to the f32 input gradient that other units add to as well.
#[cube]
pub(crate) trait AtomicAccumulate: Send + Sync + 'static {
    /// What the gradient's buffer holds: f32, or its bits as u32.
    type Proxy: Numeric;

    /// `*ptr += value`, atomically.
    fn add(ptr: &mut Atomic<Self::Proxy>, value: f32);
}

/// The device's own atomic f32 add (CUDA, HIP; not WGSL).
#[derive(CubeType)]
pub(crate) struct NativeAdd;

/// An f32 add as a compare-and-swap loop on its bits, for devices without an atomic f32 add.
#[derive(CubeType)]
pub(crate) struct CasAdd;

#[cube]
impl AtomicAccumulate for NativeAdd {
    type Proxy = f32;

    fn add(ptr: &mut Atomic<f32>, value: f32) {
        ptr.fetch_add(value);
    }
}

#[cube]
impl AtomicAccumulate for CasAdd {
    type Proxy = u32;

    fn add(ptr: &mut Atomic<u32>, value: f32) {
        if value != 0.0 {
            let mut current = ptr.load();
            loop {
                let seen = current;
                let sum = (f32::from_bits(current) + value).to_bits();
                current = ptr.compare_exchange_weak(current, sum);
                if seen == current {
                    break;
                }
            }
        }
    }
}

/// Sampled value of one channel: its four corners (0 outside the image).
#[cube]
fn corner<F: Float>(image: &Tensor<F>, index: usize, valid: bool) -> f32 {
    let mut value = f32::new(0.0);
    if valid {
        value = f32::cast_from(image[index]);
    }
    value
}

/// Every gradient of a deformable convolution that depends on the input's samples.
///
/// Contiguous tensors, storage `F`:
/// - `image`: `[N, C, H, W]`; `offset`, `grad_offset`: `[N, 2 · og · kh · kw, Ho, Wo]`, a
///   `(dy, dx)` pair per offset group and tap; `mask`, `grad_mask`: `[N, og · kh · kw, Ho, Wo]`
///   (one-element placeholders without a mask);
/// - `grad_columns`: `[C · kh · kw, N · Ho · Wo]`, the weight's transpose times the output
///   gradient (rows `[channel, tap]`, columns `[batch, position]`);
/// - `columns`, written: same layout, `mask · sample`, what im2col gives the forward pass;
/// - `grad_image`: `[N · C · H · W]` f32 (or its bits), zeroed by the launcher, added to.
///
/// One unit per `(n, group, tap, position)`, `N · og · kh · kw · Ho · Wo` in all.
#[cube(launch)]
#[allow(clippy::too_many_arguments)]
pub(crate) fn deform_conv2d_backward_kernel<F: Float, A: AtomicAccumulate>(
    image: &Tensor<F>,
    offset: &Tensor<F>,
    mask: &Tensor<F>,
    grad_columns: &Tensor<F>,
    grad_image: &mut Tensor<Atomic<A::Proxy>>,
    grad_offset: &mut Tensor<F>,
    grad_mask: &mut Tensor<F>,
    columns: &mut Tensor<F>,
    stride_h: usize,
    stride_w: usize,
    dilation_h: usize,
    dilation_w: usize,
    pad_h: f32,
    pad_w: f32,
    offset_groups: usize,
    kernel_w: usize,
    taps: usize,
    #[comptime] has_mask: bool,
    #[define(F)] _dtype: StorageType,
) {
    let (batch, channels) = (image.shape(0), image.shape(1));
    let (height, width) = (image.shape(2), image.shape(3));
    let out_w = offset.shape(3);
    let positions = offset.shape(2) * out_w;
    if ABSOLUTE_POS >= batch * offset_groups * taps * positions {
        terminate!();
    }
    let position = ABSOLUTE_POS % positions;
    let slot = ABSOLUTE_POS / positions; // (n · og + group) · taps + tap
    let tap = slot % taps;
    let group = (slot / taps) % offset_groups;
    let n = slot / (taps * offset_groups);

    // Offsets of this slot: channel `(group · taps + tap) · 2 + direction`.
    let offset_index = slot * 2 * positions + position;
    let mask_index = slot * positions + position;
    let modulation = if has_mask {
        f32::cast_from(mask[mask_index])
    } else {
        f32::new(1.0)
    };
    let y = f32::cast_from((position / out_w) * stride_h + (tap / kernel_w) * dilation_h) - pad_h
        + f32::cast_from(offset[offset_index]);
    let x = f32::cast_from((position % out_w) * stride_w + (tap % kernel_w) * dilation_w) - pad_w
        + f32::cast_from(offset[offset_index + positions]);

    let (y_low, x_low) = (y.floor(), x.floor());
    let (ly, lx) = (y - y_low, x - x_low);
    let (hy, hx) = (f32::new(1.0) - ly, f32::new(1.0) - lx);
    let (h, w) = (f32::cast_from(height), f32::cast_from(width));
    let y0_ok = y_low >= 0.0 && y_low < h;
    let y1_ok = y_low + 1.0 >= 0.0 && y_low + 1.0 < h;
    let x0_ok = x_low >= 0.0 && x_low < w;
    let x1_ok = x_low + 1.0 >= 0.0 && x_low + 1.0 < w;
    // Pixel rows and columns of the corners (clamped at 0 where a corner is outside: unused).
    let y0 = usize::cast_from(f32::max(y_low, 0.0));
    let y1 = usize::cast_from(f32::max(y_low + 1.0, 0.0));
    let x0 = usize::cast_from(f32::max(x_low, 0.0));
    let x1 = usize::cast_from(f32::max(x_low + 1.0, 0.0));
    // The four corners: pixel index in a plane, inside the image, bilinear weight.
    let (i00, ok00, w00) = (y0 * width + x0, y0_ok && x0_ok, hy * hx);
    let (i01, ok01, w01) = (y0 * width + x1, y0_ok && x1_ok, hy * lx);
    let (i10, ok10, w10) = (y1 * width + x0, y1_ok && x0_ok, ly * hx);
    let (i11, ok11, w11) = (y1 * width + x1, y1_ok && x1_ok, ly * lx);

    let per_group = channels / offset_groups;
    let cols = batch * positions;
    let col = n * positions + position;
    let mut grad_y = f32::new(0.0);
    let mut grad_x = f32::new(0.0);
    let mut grad_m = f32::new(0.0);
    let mut c = 0;
    while c < per_group {
        let channel = group * per_group + c;
        let plane = (n * channels + channel) * height * width;
        let v00 = corner::<F>(image, plane + i00, ok00);
        let v01 = corner::<F>(image, plane + i01, ok01);
        let v10 = corner::<F>(image, plane + i10, ok10);
        let v11 = corner::<F>(image, plane + i11, ok11);
        let sample = w00 * v00 + w01 * v01 + w10 * v10 + w11 * v11;

        let row = (channel * taps + tap) * cols + col;
        let grad_col = f32::cast_from(grad_columns[row]);
        let scaled = modulation * grad_col;
        grad_y += scaled * (hx * (v10 - v00) + lx * (v11 - v01));
        grad_x += scaled * (hy * (v01 - v00) + ly * (v11 - v10));
        grad_m += grad_col * sample;
        columns[row] = F::cast_from(modulation * sample);

        if ok00 {
            A::add(&mut grad_image[plane + i00], scaled * w00);
        }
        if ok01 {
            A::add(&mut grad_image[plane + i01], scaled * w01);
        }
        if ok10 {
            A::add(&mut grad_image[plane + i10], scaled * w10);
        }
        if ok11 {
            A::add(&mut grad_image[plane + i11], scaled * w11);
        }
        c += 1;
    }
    grad_offset[offset_index] = F::cast_from(grad_y);
    grad_offset[offset_index + positions] = F::cast_from(grad_x);
    if has_mask {
        grad_mask[mask_index] = F::cast_from(grad_m);
    }
}
