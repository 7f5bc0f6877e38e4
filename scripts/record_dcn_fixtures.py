#!/usr/bin/env python3
"""Record the deformable-convolution fixtures of crates/kernels/tests/it/tier2/dcn.rs.

For each case, random float32 inputs (odd sizes; offsets of a few pixels, so that samples fall
between pixels and outside the image) and torchvision.ops.deform_conv2d computed in float64 on
PyTorch's CPU from the same (float32-representable) values:

* ``<case>.x`` [N, C_in, H, W], ``.offset`` [N, 2·G_off·kh·kw, H_out, W_out],
  ``.mask`` [N, G_off·kh·kw, H_out, W_out] (DCNv2 cases only), ``.weight``
  [C_out, C_in / G_w, kh, kw], ``.bias`` [C_out], ``.grad_out`` [N, C_out, H_out, W_out]
  (float32);
* ``<case>.out`` the forward output and ``<case>.grad.<input>`` the gradient of
  ``sum(out · grad_out)`` with respect to x, offset, mask, weight and bias (float64);
* the metadata ``<case>`` = "stride_h,stride_w,pad_h,pad_w,dil_h,dil_w,weight_groups,
  offset_groups" (torchvision infers the groups from the shapes).

    pip install torch torchvision safetensors
    python3 scripts/record_dcn_fixtures.py    # writes crates/kernels/tests/fixtures/dcn.safetensors
"""

import pathlib

import torch
import torchvision
from safetensors.torch import save_file

OUT = pathlib.Path(__file__).resolve().parent.parent / "crates/kernels/tests/fixtures"

# name: (batch, c_in, c_out, h, w, kernel, stride, padding, dilation, weight_groups,
#        offset_groups, modulated)
CASES = {
    "v1_basic": (2, 3, 5, 9, 7, (3, 3), (1, 1), (1, 1), (1, 1), 1, 1, False),
    "v2_basic": (2, 3, 5, 9, 7, (3, 3), (1, 1), (1, 1), (1, 1), 1, 1, True),
    "v2_strided": (1, 4, 6, 11, 10, (3, 2), (2, 1), (1, 0), (1, 2), 2, 2, True),
    "v2_dilated": (2, 2, 3, 8, 9, (3, 3), (1, 2), (2, 2), (2, 2), 1, 2, True),
}


def out_size(size, kernel, stride, padding, dilation):
    return (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1


def main():
    generator = torch.Generator().manual_seed(20261202)
    tensors, metadata = {}, {}
    for name, case in CASES.items():
        n, c_in, c_out, h, w, k, s, p, d, wg, og, modulated = case
        ho = out_size(h, k[0], s[0], p[0], d[0])
        wo = out_size(w, k[1], s[1], p[1], d[1])

        def rand(*shape, scale=1.0):
            return (torch.randn(*shape, generator=generator) * scale).float()

        inputs = {
            "x": rand(n, c_in, h, w),
            # A few pixels: bilinear samples between pixels and beyond the border.
            "offset": rand(n, 2 * og * k[0] * k[1], ho, wo, scale=2.0),
            "weight": rand(c_out, c_in // wg, k[0], k[1], scale=0.5),
            "bias": rand(c_out),
        }
        if modulated:
            inputs["mask"] = torch.sigmoid(rand(n, og * k[0] * k[1], ho, wo))
        grad_out = rand(n, c_out, ho, wo)
        exact = {key: v.double().requires_grad_() for key, v in inputs.items()}
        out = torchvision.ops.deform_conv2d(
            exact["x"], exact["offset"], exact["weight"], exact["bias"],
            stride=s, padding=p, dilation=d, mask=exact.get("mask"))
        assert out.shape == (n, c_out, ho, wo), out.shape
        (out * grad_out.double()).sum().backward()
        for key, value in inputs.items():
            tensors[f"{name}.{key}"] = value.contiguous()
            tensors[f"{name}.grad.{key}"] = exact[key].grad.contiguous()
        tensors[f"{name}.grad_out"] = grad_out.contiguous()
        tensors[f"{name}.out"] = out.detach().contiguous()
        metadata[name] = ",".join(str(v) for v in (*s, *p, *d, wg, og))
    metadata["torch"] = torch.__version__
    metadata["torchvision"] = torchvision.__version__
    OUT.mkdir(parents=True, exist_ok=True)
    save_file(tensors, OUT / "dcn.safetensors", metadata=metadata)
    print(f"wrote {OUT / 'dcn.safetensors'} ({len(tensors)} tensors)")


if __name__ == "__main__":
    main()
