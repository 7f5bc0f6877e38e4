//! The NMS family on the host, over `[x1, y1, x2, y2]` boxes in f32: the ground truth of the
//! tests and what [`super`]'s functions compute today.
//!
//! Each follows its reference line by line: torchvision's `nms_kernel.cpp` (stable sort by
//! decreasing score, suppress while IoU > threshold) and mmcv's `softnms_cpu` (select the
//! highest remaining score, decay the others by their IoU with it, drop those under
//! `min_score` by swapping them with the last box).

/// Intersection over union of boxes `a` and `b`; `offset` 1 counts the last pixel of each
/// side (mmcv's legacy convention), 0 does not (torchvision's).
pub fn iou(a: &[f32; 4], b: &[f32; 4], offset: f32) -> f32 {
    let area = |r: &[f32; 4]| (r[2] - r[0] + offset) * (r[3] - r[1] + offset);
    let w = (a[2].min(b[2]) - a[0].max(b[0]) + offset).max(0.0);
    let h = (a[3].min(b[3]) - a[1].max(b[1]) + offset).max(0.0);
    let inter = w * h;
    inter / (area(a) + area(b) - inter)
}

/// Indices of `scores` by decreasing score, ties by increasing index (a stable sort, as
/// torchvision's).
pub fn by_decreasing_score(scores: &[f32]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..scores.len()).collect();
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]));
    order
}

/// Greedy NMS: the indices kept, by decreasing score. A box is suppressed by a kept box of
/// higher rank whose IoU with it exceeds `iou_threshold`.
pub fn nms_host(boxes: &[[f32; 4]], scores: &[f32], iou_threshold: f32, offset: f32) -> Vec<usize> {
    let order = by_decreasing_score(scores);
    let mut suppressed = vec![false; boxes.len()];
    let mut keep = Vec::new();
    for (rank, &i) in order.iter().enumerate() {
        if suppressed[i] {
            continue;
        }
        keep.push(i);
        for &j in &order[rank + 1..] {
            if !suppressed[j] && iou(&boxes[i], &boxes[j], offset) > iou_threshold {
                suppressed[j] = true;
            }
        }
    }
    keep
}

/// Suppression bitmask of `boxes` in rank order (what the device computes, see
/// [`super::NmsKernel::nms_suppression_mask`]): bit `k` of word `w` of row `i` is set iff box
/// `j = 32 w + k` ranks below `i`, has its class and `iou(i, j) > iou_threshold`;
/// `[n · ⌈n/32⌉]` words, row-major.
pub fn suppression_mask_host(
    boxes: &[[f32; 4]],
    classes: &[i64],
    iou_threshold: f32,
    offset: f32,
) -> Vec<u32> {
    let n = boxes.len();
    let words = n.div_ceil(32);
    let mut mask = vec![0u32; n * words];
    for i in 0..n {
        for j in i + 1..n {
            if classes[i] == classes[j] && iou(&boxes[i], &boxes[j], offset) > iou_threshold {
                mask[i * words + j / 32] |= 1 << (j % 32);
            }
        }
    }
    mask
}

/// The greedy pass over a suppression mask of `n` boxes in rank order (torchvision's host
/// loop after its CUDA kernel): the ranks kept, in order. A box is kept unless a kept box of
/// higher rank suppresses it.
pub fn greedy_over_mask(mask: &[u32], n: usize) -> Vec<usize> {
    let words = n.div_ceil(32);
    assert_eq!(
        mask.len(),
        n * words,
        "a mask of {n} boxes has {} words",
        n * words
    );
    let mut removed = vec![0u32; words];
    let mut keep = Vec::new();
    for i in 0..n {
        if removed[i / 32] >> (i % 32) & 1 == 0 {
            keep.push(i);
            let row = &mask[i * words..(i + 1) * words];
            for (r, m) in removed.iter_mut().zip(row).skip(i / 32) {
                *r |= m;
            }
        }
    }
    keep
}

/// How soft-NMS decays the score of a box overlapping a kept one by IoU `o`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SoftNmsMethod {
    /// Drop it (weight 0) when `o ≥ iou_threshold`: greedy NMS with mmcv's `>=`.
    Naive,
    /// Weight `1 − o` when `o ≥ iou_threshold`, else 1.
    Linear,
    /// Weight `exp(−o² / sigma)` whatever `o` (mmcv's form, without a factor 2).
    Gaussian,
}

/// Soft-NMS, mmcv's `soft_nms`: `(index, decayed score)` of the boxes kept, in the order they
/// were selected (each time the highest remaining score).
pub fn soft_nms_host(
    boxes: &[[f32; 4]],
    scores: &[f32],
    iou_threshold: f32,
    sigma: f32,
    min_score: f32,
    method: SoftNmsMethod,
    offset: f32,
) -> Vec<(usize, f32)> {
    let mut boxes = boxes.to_vec();
    let mut scores = scores.to_vec();
    let mut index: Vec<usize> = (0..boxes.len()).collect();
    let mut n = boxes.len();
    let mut i = 0;
    while i < n {
        // The highest remaining score moves to position i (the first of equal scores wins).
        let best = (i..n).fold(i, |best, p| if scores[p] > scores[best] { p } else { best });
        boxes.swap(i, best);
        scores.swap(i, best);
        index.swap(i, best);
        let mut p = i + 1;
        while p < n {
            let o = iou(&boxes[i], &boxes[p], offset);
            let weight = match method {
                SoftNmsMethod::Naive => {
                    if o >= iou_threshold {
                        0.0
                    } else {
                        1.0
                    }
                }
                SoftNmsMethod::Linear => {
                    if o >= iou_threshold {
                        1.0 - o
                    } else {
                        1.0
                    }
                }
                SoftNmsMethod::Gaussian => (-(o * o) / sigma).exp(),
            };
            scores[p] *= weight;
            if scores[p] < min_score {
                // Dropped: the last remaining box takes its place and is looked at next.
                n -= 1;
                boxes.swap(p, n);
                scores.swap(p, n);
                index.swap(p, n);
            } else {
                p += 1;
            }
        }
        i += 1;
    }
    index.into_iter().zip(scores).take(n).collect()
}

/// Boxes grouped by class: `(members, segments)` with `members` the indices of the boxes of
/// the lowest class first (increasing index within a class) and class `k` at
/// `members[segments[k]..segments[k + 1]]`.
pub fn group_by_class(classes: &[i64]) -> (Vec<usize>, Vec<usize>) {
    let mut members: Vec<usize> = (0..classes.len()).collect();
    members.sort_by_key(|&i| classes[i]);
    let mut segments = vec![0];
    for k in 1..members.len() {
        if classes[members[k]] != classes[members[k - 1]] {
            segments.push(k);
        }
    }
    if !members.is_empty() {
        segments.push(members.len());
    }
    (members, segments)
}

/// `(index, value)` pairs by decreasing score, ties by increasing index: how the batched
/// functions merge their classes.
pub fn merge_by_score<T: Copy>(kept: &mut [(usize, T)], score_of: impl Fn(usize, T) -> f32) {
    kept.sort_by(|a, b| {
        score_of(b.0, b.1)
            .total_cmp(&score_of(a.0, a.1))
            .then(a.0.cmp(&b.0))
    });
}

/// `per_class(boxes, scores)` run on each class of `classes` separately (boxes of different
/// classes never suppress each other), its results mapped back to the input's indices and
/// merged by decreasing score, ties by increasing index.
pub fn batched_host<T: Copy>(
    boxes: &[[f32; 4]],
    scores: &[f32],
    classes: &[i64],
    per_class: impl Fn(&[[f32; 4]], &[f32]) -> Vec<(usize, T)>,
    score_of: impl Fn(usize, T) -> f32,
) -> Vec<(usize, T)> {
    let (members, segments) = group_by_class(classes);
    let mut kept = Vec::new();
    for class in segments.windows(2) {
        let members = &members[class[0]..class[1]];
        let class_boxes: Vec<[f32; 4]> = members.iter().map(|&i| boxes[i]).collect();
        let class_scores: Vec<f32> = members.iter().map(|&i| scores[i]).collect();
        kept.extend(
            per_class(&class_boxes, &class_scores)
                .into_iter()
                .map(|(j, value)| (members[j], value)),
        );
    }
    merge_by_score(&mut kept, score_of);
    kept
}
