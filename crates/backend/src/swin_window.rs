//! timm's plain-Burn window ops of shifted-window attention (Swin): partition and reverse, the
//! cyclic shift, the attention mask of shifted windows and the relative position index.
//!
//! This is the plain form that [`crate::fused::window_process`],
//! [`crate::fused::window_process_reverse`] and [`crate::fused::window_softmax`] replace when a
//! kernel is routed, and what the Swin model (`burnacc_models::swin`, which re-exports this
//! module as `swin::window`) runs otherwise; the kernel benchmark times the fused window
//! kernels against it. It lives here, beside the fused entry points, so that models and kernels
//! share it without depending on each other.
//!
//! Maps are NHWC (`[batch, h, w, channels]`) as in timm's current Swin. The mask and the index
//! depend only on sizes, so they are computed on the host once per block and uploaded; they are
//! constants, not parameters.

use burn::tensor::backend::Backend;
use burn::tensor::{Int, Tensor, TensorData};

/// Score added to the attention logits of a query/key pair that the cyclic shift brought into
/// one window from regions that are not adjacent in the image (timm's and the paper's −100:
/// large enough that `softmax` gives the pair a weight below e⁻⁹⁰, finite so that no row is
/// all −∞).
pub const SHIFTED_WINDOW_MASK: f32 = -100.0;

/// Splits a map into non-overlapping windows (timm `window_partition`).
///
/// x: `[batch, h, w, c]` with `h`, `w` multiples of the window `[wh, ww]` →
/// `[batch · (h/wh) · (w/ww), wh · ww, c]`, windows in row-major order per image, tokens in
/// row-major order per window.
pub fn window_partition<B: Backend>(x: Tensor<B, 4>, window: [usize; 2]) -> Tensor<B, 3> {
    let [batch, h, w, c] = x.dims();
    let [wh, ww] = window;
    debug_assert!(h % wh == 0 && w % ww == 0, "{h}x{w} map, {wh}x{ww} window");
    x.reshape([batch, h / wh, wh, w / ww, ww, c])
        .permute([0, 1, 3, 2, 4, 5])
        .reshape([batch * (h / wh) * (w / ww), wh * ww, c])
}

/// Inverse of [`window_partition`] (timm `window_reverse`).
///
/// windows: `[batch · (h/wh) · (w/ww), wh · ww, c]` → `[batch, h, w, c]`.
pub fn window_reverse<B: Backend>(
    windows: Tensor<B, 3>,
    window: [usize; 2],
    resolution: [usize; 2],
) -> Tensor<B, 4> {
    let [num, _, c] = windows.dims();
    let [wh, ww] = window;
    let [h, w] = resolution;
    let batch = num / ((h / wh) * (w / ww));
    windows
        .reshape([batch, h / wh, w / ww, wh, ww, c])
        .permute([0, 1, 3, 2, 4, 5])
        .reshape([batch, h, w, c])
}

/// `torch.roll(x, shifts=(shift_h, shift_w), dims=(1, 2))`: `out[i] = x[(i − shift) mod n]`
/// along `h` and `w`, any sign.
///
/// Written with slices rather than Burn's `roll`, whose sign convention is the opposite
/// (Burn 0.21's `roll_dim(x, s)` gives `out[i] = x[(i + s) mod n]`), so that this matches timm
/// whatever that convention becomes.
///
/// x: `[batch, h, w, c]` → same shape.
pub fn cyclic_shift<B: Backend>(x: Tensor<B, 4>, shift_h: isize, shift_w: isize) -> Tensor<B, 4> {
    let x = roll_dim(x, shift_h, 1);
    roll_dim(x, shift_w, 2)
}

/// `torch.roll` along one dimension.
fn roll_dim<B: Backend>(x: Tensor<B, 4>, shift: isize, dim: usize) -> Tensor<B, 4> {
    let n = x.dims()[dim];
    let shift = shift.rem_euclid(n as isize) as usize;
    if shift == 0 {
        return x;
    }
    // The last `shift` entries wrap around to the front.
    Tensor::cat(
        vec![
            x.clone().narrow(dim, n - shift, shift),
            x.narrow(dim, 0, n - shift),
        ],
        dim,
    )
}

/// The attention mask of shifted windows (timm `SwinTransformerBlock.get_attn_mask`), as host
/// values `[num_windows · n · n]` with `n = wh · ww`.
///
/// After the cyclic shift by `[sh, sw]` the padded map `[hp, wp]` holds 3 × 3 regions (rows
/// `[0, hp − wh)`, `[hp − wh, hp − sh)`, `[hp − sh, hp)`, likewise for columns) that were not
/// neighbours before the shift. A query and a key of one window attend to each other only when
/// they come from the same region: 0 then, [`SHIFTED_WINDOW_MASK`] otherwise.
pub fn shifted_window_mask_values(
    padded: [usize; 2],
    window: [usize; 2],
    shift: [usize; 2],
) -> Vec<f32> {
    let [hp, wp] = padded;
    let [wh, ww] = window;
    // timm labels the regions by slicing `[0:-wh]`, `[-wh:-sh]`, `[-sh:]`; the label of a row
    // only matters between rows of one window, where this comparison gives the same partition.
    let region = |i: usize, size: usize, win: usize, sft: usize| {
        if i < size - win {
            0
        } else if i < size - sft {
            1
        } else {
            2
        }
    };
    let label = |y: usize, x: usize| 3 * region(y, hp, wh, shift[0]) + region(x, wp, ww, shift[1]);
    let n = wh * ww;
    let mut mask = Vec::with_capacity((hp / wh) * (wp / ww) * n * n);
    for wy in 0..hp / wh {
        for wx in 0..wp / ww {
            let labels: Vec<usize> = (0..n)
                .map(|t| label(wy * wh + t / ww, wx * ww + t % ww))
                .collect();
            for &query in &labels {
                for &key in &labels {
                    mask.push(if query == key {
                        0.0
                    } else {
                        SHIFTED_WINDOW_MASK
                    });
                }
            }
        }
    }
    mask
}

/// [`shifted_window_mask_values`] as a tensor `[num_windows, wh · ww, wh · ww]` on `device`.
pub fn shifted_window_mask<B: Backend>(
    padded: [usize; 2],
    window: [usize; 2],
    shift: [usize; 2],
    device: &B::Device,
) -> Tensor<B, 3> {
    let n = window[0] * window[1];
    let windows = (padded[0] / window[0]) * (padded[1] / window[1]);
    let values = shifted_window_mask_values(padded, window, shift);
    Tensor::from_data(TensorData::new(values, [windows, n, n]), device)
}

/// Row of the relative position bias table for every (query, key) pair of a window
/// (timm `get_relative_position_index`), flattened `[n · n]` with `n = wh · ww`.
///
/// For tokens at `(yq, xq)` and `(yk, xk)` it is
/// `(yq − yk + wh − 1) · (2ww − 1) + (xq − xk + ww − 1)`, an index into the
/// `(2wh − 1) · (2ww − 1)` possible offsets.
pub fn relative_position_index_values(window: [usize; 2]) -> Vec<i64> {
    let [wh, ww] = window;
    let n = wh * ww;
    let mut index = Vec::with_capacity(n * n);
    for q in 0..n {
        for k in 0..n {
            let dy = (q / ww) as i64 - (k / ww) as i64 + wh as i64 - 1;
            let dx = (q % ww) as i64 - (k % ww) as i64 + ww as i64 - 1;
            index.push(dy * (2 * ww as i64 - 1) + dx);
        }
    }
    index
}

/// [`relative_position_index_values`] as an integer tensor `[n · n]` on `device`.
pub fn relative_position_index<B: Backend>(
    window: [usize; 2],
    device: &B::Device,
) -> Tensor<B, 1, Int> {
    let values = relative_position_index_values(window);
    let len = values.len();
    Tensor::from_data(TensorData::new(values, [len]), device)
}
