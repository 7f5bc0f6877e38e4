//! CubeCL gathers of the window processing: one unit per output vector of `N` channels; each
//! reads one input vector (or none, for padding) and writes one output vector.
//!
//! Tensors are contiguous and read as vectors of `N` storage floats `F` along the channels;
//! the launcher picks `N` dividing `c`, so vectors never straddle tokens. Sizes are passed as
//! runtime scalars (one compiled kernel serves every block of a model), the shift already
//! reduced modulo the map size.

use burn::cubecl;
use cubecl::prelude::*;

/// Process: `windows[((b · nh + wy) · nw + wx) · wh · ww + ty · ww + tx, :]` =
/// `x[b, (wy · wh + ty + sh) mod h, (wx · ww + tx + sw) mod w, :]`, or 0 where
/// `wy · wh + ty ≥ h` or `wx · ww + tx ≥ w` (padding).
///
/// `x`: `[batch · h · w · c / N]` vectors; `windows`: `[batch · nh · nw · wh · ww · c / N]`;
/// `cv = c / N`.
#[cube(launch)]
#[allow(clippy::too_many_arguments)]
pub(crate) fn window_process_kernel<F: Float, N: Size>(
    x: &Tensor<Vector<F, N>>,
    windows: &mut Tensor<Vector<F, N>>,
    h: usize,
    w: usize,
    wh: usize,
    ww: usize,
    nh: usize,
    nw: usize,
    sh: usize,
    sw: usize,
    cv: usize,
    #[define(F)] _dtype: StorageType,
) {
    let i = ABSOLUTE_POS;
    if i >= windows.len() {
        terminate!();
    }
    let channel = i % cv;
    let token = i / cv;
    let area = wh * ww;
    let t = token % area;
    let window = token / area;
    let wx = window % nw;
    let wy = (window / nw) % nh;
    let b = window / (nw * nh);
    let py = wy * wh + t / ww;
    let px = wx * ww + t % ww;
    if py < h && px < w {
        let sy = (py + sh) % h;
        let sx = (px + sw) % w;
        windows[i] = x[((b * h + sy) * w + sx) * cv + channel];
    } else {
        windows[i] = Vector::cast_from(0.0f32);
    }
}

/// Reverse: `y[b, y, x, :]` = the window token at map position
/// `((y − sh) mod h, (x − sw) mod w)` of image `b`, i.e. the inverse of
/// [`window_process_kernel`] on every non-padding token.
///
/// `windows`: `[batch · nh · nw · wh · ww · c / N]` vectors; `y`: `[batch · h · w · c / N]`.
#[cube(launch)]
#[allow(clippy::too_many_arguments)]
pub(crate) fn window_process_reverse_kernel<F: Float, N: Size>(
    windows: &Tensor<Vector<F, N>>,
    y: &mut Tensor<Vector<F, N>>,
    h: usize,
    w: usize,
    wh: usize,
    ww: usize,
    nh: usize,
    nw: usize,
    sh: usize,
    sw: usize,
    cv: usize,
    #[define(F)] _dtype: StorageType,
) {
    let i = ABSOLUTE_POS;
    if i >= y.len() {
        terminate!();
    }
    let channel = i % cv;
    let position = i / cv;
    let x = position % w;
    let row = (position / w) % h;
    let b = position / (w * h);
    // Unsigned arithmetic: add the map size before subtracting the (reduced) shift.
    let py = (row + h - sh) % h;
    let px = (x + w - sw) % w;
    let window = (b * nh + py / wh) * nw + px / ww;
    let token = window * wh * ww + (py % wh) * ww + px % ww;
    y[i] = windows[token * cv + channel];
}
