//! The CubeCL gather of the window processing, both directions: one unit per output vector of
//! `N` channels; each reads one input vector (or none, for padding) and writes one output
//! vector.
//!
//! Tensors are contiguous and read as vectors of `N` storage floats `F` along the channels;
//! the launcher picks `N` dividing `c`, so vectors never straddle tokens. Sizes are passed as
//! runtime scalars (one compiled kernel serves every block of a model), the shift already
//! reduced modulo the map size.

use burn::cubecl;
use cubecl::prelude::*;

/// One gather of the window processing, in the direction `reverse` says:
///
/// - process (`reverse = false`): `windows[((b · nh + wy) · nw + wx) · wh · ww + ty · ww + tx, :]`
///   = `x[b, (wy · wh + ty + sh) mod h, (wx · ww + tx + sw) mod w, :]`, or 0 where
///   `wy · wh + ty ≥ h` or `wx · ww + tx ≥ w` (padding); `input` is the map
///   `[batch · h · w · c / N]` vectors, `output` the windows
///   `[batch · nh · nw · wh · ww · c / N]`;
/// - reverse (`reverse = true`): `y[b, y, x, :]` = the window token at map position
///   `((y − sh) mod h, (x − sw) mod w)` of image `b`, the inverse on every non-padding token;
///   `input` is the windows, `output` the map.
///
/// `cv = c / N` vectors per token.
#[cube(launch)]
#[allow(clippy::too_many_arguments)]
pub(crate) fn window_gather_kernel<F: Float, N: Size>(
    input: &Tensor<Vector<F, N>>,
    output: &mut Tensor<Vector<F, N>>,
    h: usize,
    w: usize,
    wh: usize,
    ww: usize,
    nh: usize,
    nw: usize,
    sh: usize,
    sw: usize,
    cv: usize,
    #[comptime] reverse: bool,
    #[define(F)] _dtype: StorageType,
) {
    let i = ABSOLUTE_POS;
    if i >= output.len() {
        terminate!();
    }
    let channel = i % cv;
    if reverse {
        let position = i / cv;
        let x = position % w;
        let row = (position / w) % h;
        let b = position / (w * h);
        // Unsigned arithmetic: add the map size before subtracting the (reduced) shift.
        let py = (row + h - sh) % h;
        let px = (x + w - sw) % w;
        let window = (b * nh + py / wh) * nw + px / ww;
        let token = window * wh * ww + (py % wh) * ww + px % ww;
        output[i] = input[token * cv + channel];
    } else {
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
            output[i] = input[((b * h + sy) * w + sx) * cv + channel];
        } else {
            output[i] = Vector::cast_from(0.0f32);
        }
    }
}
