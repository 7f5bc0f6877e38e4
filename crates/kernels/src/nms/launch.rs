//! Host side of the NMS kernels on Burn's CubeCL primitive ([`CubeTensor`]): shape checks,
//! launches, and the read-back of what the host's greedy pass (or the caller) needs.
//!
//! Boxes of any float dtype are computed in f32; class ids may be any integer dtype; segment
//! offsets come from the host. An empty input launches nothing (and bumps no counter).

use burn::cubecl::CubeElement;
use burn::cubecl::{CubeCount, CubeDim};
use burn::tensor::{DType, Shape};
use burn_cubecl::CubeRuntime;
use burn_cubecl::kernel::{cast, into_contiguous};
use burn_cubecl::ops::into_data_sync;
use burn_cubecl::tensor::CubeTensor;

use super::counters;
use super::kernel::{soft_nms_kernel, suppression_mask_kernel};
use super::{SoftNmsConfig, SoftNmsMethod};
use crate::cube_util::{elementwise_grid, empty_like};

/// Units of the soft-NMS cube: enough to spread the argmax, the decay and the partition of a
/// few thousand boxes, few enough that one cube per class stays cheap.
const SOFT_NMS_BLOCK: usize = 256;
/// Loop iterations one unit may run in one launch of the soft-NMS kernel: below lavapipe's
/// limit of 65 535 per shader invocation, beyond which its loops silently stop.
const LOOP_BUDGET: usize = 60_000;

/// `[n, 4]` of `boxes` as contiguous f32 `[n · 4]`, checked.
fn boxes_f32<R: CubeRuntime>(op: &str, boxes: CubeTensor<R>) -> (CubeTensor<R>, usize) {
    let dims = boxes.meta.shape().as_slice().to_vec();
    assert!(
        dims.len() == 2 && dims[1] == 4,
        "{op}: boxes must be [n, 4], got {dims:?}"
    );
    let n = dims[0];
    let boxes = into_contiguous(cast(boxes, DType::F32));
    (burn_cubecl::ops::reshape(boxes, Shape::new([n * 4])), n)
}

fn u32s(tensor: CubeTensor<impl CubeRuntime>) -> Vec<u32> {
    into_data_sync(tensor).to_vec().expect("a u32 tensor")
}

/// The suppression bitmask of boxes in rank order, read back to the host.
///
/// - `boxes`: `[n, 4]` `(x1, y1, x2, y2)`, rows by decreasing score, any float dtype;
/// - `classes`: `[n]` class ids in the same order, any integer dtype (all equal: plain NMS);
/// - returns `[n · ⌈n/32⌉]` u32 words, row-major: bit `k` of word `w` of row `i` is set iff
///   box `32 w + k` ranks below `i`, has its class and an IoU with it above `iou_threshold`
///   (areas `x2 − x1 + offset`).
pub fn suppression_mask_cube<R: CubeRuntime>(
    boxes: CubeTensor<R>,
    classes: CubeTensor<R>,
    iou_threshold: f32,
    offset: f32,
) -> Vec<u32> {
    let (boxes, n) = boxes_f32("nms", boxes);
    assert_eq!(
        classes.meta.shape().as_slice(),
        &[n],
        "nms: classes must be [n] = [{n}]"
    );
    if n == 0 {
        return Vec::new();
    }
    let words = n.div_ceil(32);
    let mask = empty_like(&boxes, Shape::new([n * words]), DType::U32);
    let classes = into_contiguous(classes);
    let class_dtype = classes.dtype;
    let (count, dim) = elementwise_grid(&boxes, n * words);
    suppression_mask_kernel::launch::<R>(
        &boxes.client.clone(),
        count,
        dim,
        boxes.into_tensor_arg(),
        classes.into_tensor_arg(),
        mask.clone().into_tensor_arg(),
        n,
        words,
        iou_threshold,
        offset,
        class_dtype.into(),
    );
    counters::SUPPRESSION_MASK.bump();
    u32s(mask)
}

/// mmcv's soft-NMS of each segment of the boxes, one cube per segment, read back to the host.
///
/// - `boxes`: `[n, 4]` any float dtype; `scores`: `[n]` any float dtype (not modified);
/// - `segments`: `s + 1` non-decreasing offsets, `segments[0] = 0`, `segments[s] = n`:
///   segment `k` is boxes `segments[k]..segments[k + 1]` (one class);
/// - returns, segment after segment, the kept boxes as `(position in boxes, decayed score)`
///   in selection order.
///
/// The kernel makes at most `steps` selections per launch (see [`soft_nms_kernel`]), so a
/// segment of `len` boxes takes `⌈len / steps⌉` launches; a few for thousands of boxes.
pub fn soft_nms_cube<R: CubeRuntime>(
    boxes: CubeTensor<R>,
    scores: CubeTensor<R>,
    segments: &[usize],
    config: &SoftNmsConfig,
) -> Vec<(usize, f32)> {
    let (boxes, n) = boxes_f32("soft_nms", boxes);
    assert_eq!(
        scores.meta.shape().as_slice(),
        &[n],
        "soft_nms: scores must be [n] = [{n}]"
    );
    assert!(
        segments.first() == Some(&0)
            && segments.last() == Some(&n)
            && segments.windows(2).all(|w| w[0] <= w[1]),
        "soft_nms: segments must rise from 0 to n = {n}, got {segments:?}"
    );
    let count = segments.len() - 1;
    if n == 0 || count == 0 {
        return Vec::new();
    }
    // A copy: the kernel decays the scores in place.
    let work = into_contiguous(cast(scores, DType::F32)).copy();
    let identity: Vec<u32> = (0..n as u32).collect();
    let order = upload(&boxes, &identity);
    let holes = empty_like(&boxes, Shape::new([n]), DType::U32);
    let bounds: Vec<u32> = segments
        .windows(2)
        .flat_map(|w| [w[0] as u32, w[1] as u32])
        .collect();
    let state = upload(&boxes, &bounds);
    let method = match config.method {
        SoftNmsMethod::Naive => 0,
        SoftNmsMethod::Linear => 1,
        SoftNmsMethod::Gaussian => 2,
    };
    let longest = segments.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0);
    // Loop iterations of one selection per unit: four chunk loops, the argmax tree and the
    // scan (log₂ of the block each), the selection itself.
    let per_selection =
        4 * longest.div_ceil(SOFT_NMS_BLOCK) + 2 * SOFT_NMS_BLOCK.ilog2() as usize + 1;
    let steps = (LOOP_BUDGET / per_selection).max(1);
    for _ in 0..longest.div_ceil(steps) {
        soft_nms_kernel::launch::<R>(
            &boxes.client.clone(),
            CubeCount::new_1d(count as u32),
            CubeDim::new_1d(SOFT_NMS_BLOCK as u32),
            boxes.clone().into_tensor_arg(),
            work.clone().into_tensor_arg(),
            order.clone().into_tensor_arg(),
            holes.clone().into_tensor_arg(),
            state.clone().into_tensor_arg(),
            config.iou_threshold,
            config.sigma,
            config.min_score,
            config.offset,
            steps,
            method,
            SOFT_NMS_BLOCK,
        );
    }
    counters::SOFT_NMS.bump();

    let (order, state) = (u32s(order), u32s(state));
    let scores: Vec<f32> = into_data_sync(work).to_vec().expect("f32 scores");
    let mut out = Vec::new();
    for (k, bounds) in segments.windows(2).enumerate() {
        let end = state[2 * k + 1] as usize;
        assert!(
            state[2 * k] as usize >= end,
            "soft_nms: segment {k} unfinished after its launches"
        );
        out.extend(order[bounds[0]..end].iter().map(|&id| {
            let id = id as usize;
            (id, scores[id])
        }));
    }
    out
}

/// `values` as a `[len]` u32 tensor on the device of `like`.
fn upload<R: CubeRuntime>(like: &CubeTensor<R>, values: &[u32]) -> CubeTensor<R> {
    let handle = like.client.create_from_slice(u32::as_bytes(values));
    CubeTensor::new_contiguous(
        like.client.clone(),
        like.device.clone(),
        Shape::new([values.len()]),
        handle,
        DType::U32,
    )
}
