//! CubeCL kernels of the NMS family.
//!
//! - [`suppression_mask_kernel`]: torchvision's CUDA `nms_kernel`, the IoU test of every pair
//!   of boxes at once, as a bitmask (one unit per 32-box word of a row);
//! - [`soft_nms_kernel`]: mmcv's `softnms_cpu` run by one cube per segment (one class of
//!   `batched_soft_nms`, or all boxes), the argmax, the score decay and the dropping of boxes
//!   spread over the cube's units, the order kept exactly as mmcv keeps it.
//!
//! Boxes are f32 `[n · 4]` rows `(x1, y1, x2, y2)`. The IoU is computed with the host
//! reference's operations in the same order (`reference::iou`), so that a pair on the
//! threshold is decided the same way on the host and on the device.

use burn::cubecl;
use cubecl::prelude::*;

/// Intersection over union of boxes `a` and `b` (rows of `boxes`), with `offset` 1 for the
/// legacy pixel areas: `reference::iou`, operation for operation.
#[cube]
fn iou(boxes: &Tensor<f32>, a: usize, b: usize, offset: f32) -> f32 {
    let (ax1, ay1, ax2, ay2) = (
        boxes[a * 4],
        boxes[a * 4 + 1],
        boxes[a * 4 + 2],
        boxes[a * 4 + 3],
    );
    let (bx1, by1, bx2, by2) = (
        boxes[b * 4],
        boxes[b * 4 + 1],
        boxes[b * 4 + 2],
        boxes[b * 4 + 3],
    );
    let area_a = (ax2 - ax1 + offset) * (ay2 - ay1 + offset);
    let area_b = (bx2 - bx1 + offset) * (by2 - by1 + offset);
    let w = f32::max(
        f32::min(ax2, bx2) - f32::max(ax1, bx1) + offset,
        f32::new(0.0),
    );
    let h = f32::max(
        f32::min(ay2, by2) - f32::max(ay1, by1) + offset,
        f32::new(0.0),
    );
    let inter = w * h;
    inter / (area_a + area_b - inter)
}

/// Suppression bitmask of boxes in rank order: bit `k` of word `w` of row `i` is set iff box
/// `j = 32 w + k` ranks below box `i` (`j > i`), has its class and `iou(i, j) > iou_threshold`.
///
/// - `boxes`: `[n · 4]` f32, rows in rank order (decreasing score);
/// - `classes`: `[n]` class ids in the same order (all equal for a plain NMS);
/// - `mask`: `[n · words]` u32, `words = ⌈n / 32⌉`, row-major; one unit per word.
#[cube(launch)]
pub(crate) fn suppression_mask_kernel<I: Int>(
    boxes: &Tensor<f32>,
    classes: &Tensor<I>,
    mask: &mut Tensor<u32>,
    n: usize,
    words: usize,
    iou_threshold: f32,
    offset: f32,
    #[define(I)] _idtype: StorageType,
) {
    let word = ABSOLUTE_POS;
    if word >= n * words {
        terminate!();
    }
    let i = word / words;
    let first = (word % words) * 32;
    let mut bits = u32::new(0);
    // Only boxes ranked below `i` can be suppressed by it.
    let mut j = if first > i { first } else { i + 1 };
    let end = if first + 32 < n { first + 32 } else { n };
    while j < end {
        if classes[i] == classes[j] && iou(boxes, i, j, offset) > iou_threshold {
            bits |= u32::new(1) << u32::cast_from(j - first);
        }
        j += 1;
    }
    mask[word] = bits;
}

/// `exp(x)` for `x ≤ 0`, rounded as the host's `expf` rounds it where that decides ties: near
/// 0, where a box barely touching the selected one keeps its score exactly (`exp(−2e−8)` is
/// 1.0 in f32) on the host, a device `exp` accurate to a few ulps (Vulkan's bound) may give
/// 0.99999994 and so break the tie with an equal score the other way. Below `2⁻⁵` in magnitude
/// a Taylor polynomial (truncation under 1e−10) replaces it.
#[cube]
fn exp_near_zero(x: f32) -> f32 {
    let mut y = x.exp();
    if x > -0.03125 {
        y = f32::new(1.0)
            + x * (f32::new(1.0)
                + x * (f32::new(0.5) + x * (f32::new(1.0 / 6.0) + x * f32::new(1.0 / 24.0))));
    }
    y
}

/// The decay weight of a box overlapping the selected one by `o`: `method` 0 naive, 1 linear,
/// 2 Gaussian (`reference::SoftNmsMethod`).
#[cube]
fn decay(o: f32, iou_threshold: f32, sigma: f32, #[comptime] method: u32) -> f32 {
    if comptime![method == 2] {
        exp_near_zero(-(o * o) / sigma)
    } else if o >= iou_threshold {
        if comptime![method == 0] {
            f32::new(0.0)
        } else {
            f32::new(1.0) - o
        }
    } else {
        f32::new(1.0)
    }
}

/// Up to `steps` selections of mmcv's soft-NMS in each segment, one cube per segment (`block`
/// units, a power of two); the host launches it until every segment is done.
///
/// - `boxes`: `[n · 4]` f32; `scores`: `[n]` f32, decayed in place (indexed by box);
/// - `order`: `[n]` u32, positions → box ids, identity on the first launch: within a segment,
///   the boxes in mmcv's order, the kept ones first in selection order;
/// - `holes`: `[n]` u32 scratch;
/// - `state`: `[segments · 2]` u32, `(i, n)` of each segment: its next selection position and
///   the end of its remaining boxes (`(start, end)` before the first launch).
///
/// mmcv moves the highest remaining score to position `i` (the first position among equal
/// scores), weighs every remaining box once against it, then drops those under `min_score`
/// by copying the last remaining box into each hole and looking at it next. That scan is a
/// two-pointer partition: the boxes kept at the front stay, and the `k`-th hole at the front
/// takes the `k`-th kept box counted from the back. Here every part is spread over the units
/// in contiguous chunks: the argmax (a tree over the units), the decay, and the partition
/// (a scan of the chunks' kept counts ranks the holes and the boxes that fill them).
///
/// Each unit's loops run `O(len / block + log block)` times per selection; `steps` bounds
/// their total within a launch (software devices such as lavapipe stop a shader's loops
/// after 65 535 iterations in all).
#[cube(launch)]
#[allow(clippy::too_many_arguments)]
pub(crate) fn soft_nms_kernel(
    boxes: &Tensor<f32>,
    scores: &mut Tensor<f32>,
    order: &mut Tensor<u32>,
    holes: &mut Tensor<u32>,
    state: &mut Tensor<u32>,
    iou_threshold: f32,
    sigma: f32,
    min_score: f32,
    offset: f32,
    steps: usize,
    #[comptime] method: u32,
    #[comptime] block: usize,
) {
    let segment = CUBE_POS;
    // Uniform over the cube, so no barrier is left waiting.
    if segment * 2 >= state.len() {
        terminate!();
    }
    let unit = UNIT_POS_X as usize;
    let mut best_score = SharedMemory::<f32>::new(block);
    let mut best_pos = SharedMemory::<u32>::new(block);
    let mut counts = SharedMemory::<u32>::new(block);
    let mut i = usize::cast_from(state[segment * 2]);
    let mut n = usize::cast_from(state[segment * 2 + 1]);
    let mut step = 0;
    while step < steps && i < n {
        // Argmax over positions [i, n); `n` marks "no candidate". Within a chunk the first of
        // equal scores wins, across chunks the lower position, as mmcv's `<` scan.
        let none = u32::cast_from(n);
        let chunk = (n - i + block - 1) / block;
        let lo = i + unit * chunk;
        let hi = if lo + chunk < n { lo + chunk } else { n };
        let mut score = f32::new(0.0);
        let mut pos = none;
        let mut p = lo;
        while p < hi {
            let s = scores[usize::cast_from(order[p])];
            if pos == none || s > score {
                score = s;
                pos = u32::cast_from(p);
            }
            p += 1;
        }
        best_score[unit] = score;
        best_pos[unit] = pos;
        sync_cube();
        let mut half = CUBE_DIM_X as usize / 2;
        while half > 0 {
            if unit < half {
                let (s, q) = (best_score[unit + half], best_pos[unit + half]);
                let (m, mp) = (best_score[unit], best_pos[unit]);
                if q != none && (mp == none || s > m || (s == m && q < mp)) {
                    best_score[unit] = s;
                    best_pos[unit] = q;
                }
            }
            sync_cube();
            half /= 2;
        }
        if unit == 0 {
            let best = usize::cast_from(best_pos[0]);
            let id = order[best];
            order[best] = order[i];
            order[i] = id;
        }
        sync_storage();
        sync_cube();

        // Decay [i + 1, n) and count what stays (a NaN score stays, as in mmcv's `<` test).
        let selected = usize::cast_from(order[i]);
        let chunk = (n - i - 1 + block - 1) / block;
        let lo = i + 1 + unit * chunk;
        let hi = if lo + chunk < n { lo + chunk } else { n };
        let mut kept_here = u32::new(0);
        let mut p = lo;
        while p < hi {
            let id = usize::cast_from(order[p]);
            let decayed = scores[id]
                * decay(
                    iou(boxes, selected, id, offset),
                    iou_threshold,
                    sigma,
                    method,
                );
            scores[id] = decayed;
            if !(decayed < min_score) {
                kept_here += 1;
            }
            p += 1;
        }
        // Inclusive scan of the kept counts over the units (Hillis–Steele).
        counts[unit] = kept_here;
        sync_cube();
        let mut shift = 1;
        while shift < block {
            let add = if unit >= shift {
                counts[unit - shift]
            } else {
                u32::new(0)
            };
            sync_cube();
            counts[unit] += add;
            sync_cube();
            shift *= 2;
        }
        let total = usize::cast_from(counts[block - 1]);
        let kept_before = usize::cast_from(counts[unit] - kept_here);
        let boundary = i + 1 + total;

        // The holes below the boundary, by rank (kept boxes before them), and how many of
        // this chunk's boxes below the boundary stay.
        let mut seen = kept_before;
        let mut p = lo;
        while p < hi && p < boundary {
            if scores[usize::cast_from(order[p])] < min_score {
                holes[i + 1 + (p - i - 1) - seen] = u32::cast_from(p);
            } else {
                seen += 1;
            }
            p += 1;
        }
        sync_storage();
        sync_cube();
        // The kept boxes above the boundary fill them, the last one the first hole. (Holes lie
        // below the boundary, so these positions are only read.)
        let mut p = if lo > boundary { lo } else { boundary };
        while p < hi {
            if !(scores[usize::cast_from(order[p])] < min_score) {
                seen += 1;
                let hole = usize::cast_from(holes[i + 1 + total - seen]);
                order[hole] = order[p];
            }
            p += 1;
        }
        sync_storage();
        sync_cube();
        n = boundary;
        i += 1;
        step += 1;
    }
    if unit == 0 {
        state[segment * 2] = u32::cast_from(i);
        state[segment * 2 + 1] = u32::cast_from(n);
    }
}
