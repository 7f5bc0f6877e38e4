#!/usr/bin/env python3
"""Record the NMS fixtures of crates/kernels/tests/it/tier2/nms.rs.

Cases (boxes float32 [N, 4] as x1, y1, x2, y2; scores float32 [N]; classes int64 [N]):

``random``    300 boxes in a 64 x 64 image, sizes 2..24, scores rounded to 0.05 so that many
              tie (ties are broken by index, torchvision's stable sort), 5 classes;
``large``     5000 boxes (> 4096) in a 512 x 512 image, 20 classes;
``one``       a single box;
``empty``     no box;
``identical`` 6 copies of one box with equal scores: everything but the first is suppressed.

Each case records, from PyTorch's CPU:

* ``nms.<t>``          ``torchvision.ops.nms(boxes, scores, t)`` for t in 0.3, 0.5, 0.7;
* ``nms_normal.<t>``   the same greedy NMS with mmcv's ``offset=1`` areas (``x2 - x1 + 1``);
* ``batched.<t>``      ``torchvision.ops.batched_nms(boxes, scores, classes, t)`` (for
                       ``large`` torchvision runs one NMS per class, its path above 4000
                       coordinates);
* ``soft.<method>.index`` / ``.score``  mmcv's ``soft_nms(boxes, scores, iou_threshold=0.3,
                       sigma=0.5, min_score=1e-3, method)``: kept indices in selection order and
                       their decayed scores, for method naive, linear, gaussian;
* ``batched_soft.linear.index`` / ``.score``  mmcv's ``batched_nms`` with
                       ``dict(type='soft_nms', iou_threshold=0.3, min_score=1e-3)``.

mmcv itself needs a compiler and CUDA headers to install, so its CPU soft-NMS
(``mmcv/ops/csrc/pytorch/cpu/nms.cpp``, ``softnms_cpu``) is ported here line by line
(``soft_nms_mmcv``), and ``nms_normal`` is torchvision's algorithm with the +1 areas.

    pip install torch torchvision safetensors
    python3 scripts/record_nms_fixtures.py    # writes crates/kernels/tests/fixtures/nms.safetensors
"""

import pathlib

import numpy as np

import torch
import torchvision
from safetensors.torch import save_file

OUT = pathlib.Path(__file__).resolve().parent.parent / "crates/kernels/tests/fixtures"
THRESHOLDS = (0.3, 0.5, 0.7)


def soft_nms_mmcv(boxes, scores, iou_threshold, sigma, min_score, method, offset=0):
    """mmcv's softnms_cpu in float32 (its `scalar_t`): (kept indices in selection order, their
    decayed scores). Each box selected decays all remaining ones at once (each is weighted
    once against it, whatever the order), then those under `min_score` are dropped as mmcv
    drops them: the last remaining box is copied into the hole and looked at next."""
    method = {"naive": 0, "linear": 1, "gaussian": 2}[method]
    f = np.float32
    b = boxes.numpy().astype(f).copy()
    s = scores.numpy().astype(f).copy()
    inds = np.arange(len(b))
    areas = (b[:, 2] - b[:, 0] + f(offset)) * (b[:, 3] - b[:, 1] + f(offset))
    arrays = [b, s, inds, areas]
    n = len(b)
    i = 0
    while i < n:
        max_pos = i
        for pos in range(i + 1, n):
            if s[max_pos] < s[pos]:
                max_pos = pos
        for arr in arrays:
            arr[[i, max_pos]] = arr[[max_pos, i]]
        rest = slice(i + 1, n)
        w = np.maximum(f(0), np.minimum(b[i, 2], b[rest, 2]) - np.maximum(b[i, 0], b[rest, 0]) + f(offset))
        h = np.maximum(f(0), np.minimum(b[i, 3], b[rest, 3]) - np.maximum(b[i, 1], b[rest, 1]) + f(offset))
        inter = w * h
        ovr = inter / (areas[i] + areas[rest] - inter)
        if method == 0:
            weight = np.where(ovr >= f(iou_threshold), f(0), f(1))
        elif method == 1:
            weight = np.where(ovr >= f(iou_threshold), f(1) - ovr, f(1))
        else:
            weight = np.exp(-(ovr * ovr) / f(sigma))
        s[rest] = s[rest] * weight.astype(f)
        pos = i + 1
        while pos < n:
            if s[pos] < f(min_score):
                n -= 1
                for arr in arrays:
                    arr[pos] = arr[n]
            else:
                pos += 1
        i += 1
    return torch.from_numpy(inds[:n].astype(np.int64)), torch.from_numpy(s[:n].copy())


def nms_offset1(boxes, scores, t):
    """torchvision's greedy NMS (float32, stable order) with the legacy +1 areas."""
    f = np.float32
    order = torch.sort(scores, stable=True, descending=True)[1].numpy()
    b = boxes.numpy().astype(f)
    area = (b[:, 2] - b[:, 0] + f(1)) * (b[:, 3] - b[:, 1] + f(1))
    suppressed = np.zeros(len(b), dtype=bool)
    keep = []
    for r, i in enumerate(order):
        if suppressed[i]:
            continue
        keep.append(i)
        j = order[r + 1:]
        w = np.maximum(f(0), np.minimum(b[i, 2], b[j, 2]) - np.maximum(b[i, 0], b[j, 0]) + f(1))
        h = np.maximum(f(0), np.minimum(b[i, 3], b[j, 3]) - np.maximum(b[i, 1], b[j, 1]) + f(1))
        inter = w * h
        suppressed[j[inter / (area[i] + area[j] - inter) > f(t)]] = True
    return torch.tensor(keep, dtype=torch.int64)


def batched_soft(boxes, scores, classes):
    """mmcv's batched_nms(type='soft_nms') without the coordinate trick: soft-NMS per class,
    then every kept row by decreasing decayed score (ties by index)."""
    kept = []
    for c in classes.unique().tolist():
        members = (classes == c).nonzero().flatten()
        idx, sc = soft_nms_mmcv(boxes[members], scores[members], 0.3, 0.5, 1e-3, "linear")
        kept += list(zip(members[idx].tolist(), sc.tolist()))
    kept.sort(key=lambda k: (-k[1], k[0]))
    return (torch.tensor([k[0] for k in kept], dtype=torch.int64),
            torch.tensor([k[1] for k in kept], dtype=torch.float32))


def random_case(g, n, size, classes):
    xy = torch.rand(n, 2, generator=g) * size
    wh = 2 + torch.rand(n, 2, generator=g) * 22
    boxes = torch.cat([xy, (xy + wh).clamp(max=size)], 1).float()
    scores = (torch.rand(n, generator=g) * 20).round() / 20
    return boxes, scores.float(), torch.randint(0, classes, (n,), generator=g)


def main():
    g = torch.Generator().manual_seed(0)
    same = torch.tensor([[3.0, 4.0, 10.0, 12.0]]).repeat(6, 1)
    cases = {
        "random": random_case(g, 300, 64, 5),
        "large": random_case(g, 5000, 512, 20),
        "one": (torch.tensor([[1.0, 2.0, 5.0, 7.0]]), torch.tensor([0.9]), torch.tensor([0])),
        "empty": (torch.zeros(0, 4), torch.zeros(0), torch.zeros(0, dtype=torch.int64)),
        "identical": (same, torch.full((6,), 0.5), torch.zeros(6, dtype=torch.int64)),
    }
    tensors = {}
    for name, (boxes, scores, classes) in cases.items():
        tensors.update({f"{name}.boxes": boxes, f"{name}.scores": scores,
                        f"{name}.classes": classes})
        for t in THRESHOLDS:
            tensors[f"{name}.nms.{t}"] = torchvision.ops.nms(boxes, scores, t)
            tensors[f"{name}.nms_normal.{t}"] = nms_offset1(boxes, scores, t)
            tensors[f"{name}.batched.{t}"] = torchvision.ops.batched_nms(boxes, scores, classes, t)
        for method in ("naive", "linear", "gaussian"):
            idx, sc = soft_nms_mmcv(boxes, scores, 0.3, 0.5, 1e-3, method)
            tensors[f"{name}.soft.{method}.index"] = idx
            tensors[f"{name}.soft.{method}.score"] = sc
        idx, sc = batched_soft(boxes, scores, classes)
        tensors[f"{name}.batched_soft.linear.index"] = idx
        tensors[f"{name}.batched_soft.linear.score"] = sc
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / "nms.safetensors"
    meta = {"torch": torch.__version__, "torchvision": torchvision.__version__}
    save_file({k: v.contiguous() for k, v in tensors.items()}, str(path), metadata=meta)
    print(f"wrote {path} ({path.stat().st_size} bytes)")
    for name in cases:
        print(name, {k.split(".", 1)[1]: len(v) for k, v in tensors.items()
                     if k.startswith(name + ".") and k.endswith(("0.5", "linear.index"))})


if __name__ == "__main__":
    main()
