#!/usr/bin/env python3
"""Record PyTorch + timm reference fixtures for the Swin Transformer parity tests.

What it records
---------------
Two reduced Swin Transformers built with timm's ``SwinTransformer`` class (the
class behind ``swin_tiny_patch4_window7_224``), small enough to commit, each
chosen to exercise a different part of the maths:

``swin_w7_56px``  Swin-T's layout scaled down: patch 4, window 7, 56 px images,
                  embed_dim 8, depths (2, 2, 2, 2), heads (2, 2, 4, 8).
                  Stage resolutions 14, 7, 4, 2: stage 0 runs shifted windows
                  (shift 3) with the -100 attention mask over 2 x 2 windows,
                  stage 1 has resolution == window (no shift), stages 2 and 3
                  clamp the window to the resolution.
``swin_w4_36px``  Odd sizes: patch 4, window 4, 36 px images, embed_dim 8,
                  depths (2, 2, 1, 1), heads (2, 2, 4, 8). Stage resolutions
                  9, 5, 3, 2: stages 0 and 1 pad the shifted map to a multiple
                  of the window (9 -> 12, 5 -> 8) and build the mask on the
                  padded map; patch merging pads odd maps (9 -> 10, 5 -> 6,
                  3 -> 4); stages 2 and 3 clamp the window.

Each fixture is one safetensors file holding:

* every parameter of the model under its timm ``state_dict`` key, float32,
  in PyTorch layout (``Linear`` weights ``[out, in]``);
* ``input``   float32 [2, 3, S, S]   a fixed standard-normal batch;
* ``stage0`` .. ``stage3``  float32 [2, h, w, c]   NHWC output of each stage
  (``model.layers[i]``), before the final norm;
* ``logits``  float32 [2, 10]        ``model(input)``;

and string metadata: ``config`` (JSON of the SwinTransformer kwargs),
``timm_version``, ``torch_version``, ``seed``, ``sensitivity`` (JSON, see
below), ``swin_tiny_state_dict`` (JSON list of ``[key, shape]`` of the full
``swin_tiny_patch4_window7_224`` at 1000 classes), ``param_counts`` (JSON of
the trainable parameter counts of Swin-T/S/B at 1000 classes) and
``description``.

Weights
-------
timm's own initialisation with ``torch.manual_seed(SEED)``, then four changes
so that every tensor visibly influences the logits (a parity test cannot catch
a misplaced tensor whose value does not matter):

* Linear weights ``N(0, 1/fan_in)`` (timm: std 0.02, which leaves attention
  scores near zero, so that the windows, the mask and the position bias hardly
  change the logits);
* LayerNorm weights ``1 + 0.2 N(0,1)`` and biases ``0.1 N(0,1)`` (timm: 1 and 0);
* Linear and convolution biases ``0.1 N(0,1)`` (timm: 0 for Linear);
* ``relative_position_bias_table`` ``N(0, 0.5)`` (timm: std 0.02, too small to
  show a wrong relative position index in the logits).

The script checks that the fixture is sensitive to the parts most easy to get
wrong: it reruns the model with the shifted-window masks removed, with the
relative position bias transposed (query and key swapped) and without the
cyclic shift's reverse roll, and fails unless each changes the logits by more
than ``MIN_SENSITIVITY``. The changes are stored in ``sensitivity``.

Everything runs in float32, eval mode (no dropout, no drop path), on the CPU,
with timm's default (non-fused, "eager") window attention.

Requirements
------------
    pip install torch timm safetensors

This script is never run in CI; the fixtures it writes are committed at
``models/tests/fixtures/swin_*.safetensors`` and the Rust tests read only them.
The committed files were recorded with timm 1.0.31 and torch 2.15.0 (CPU).

Usage
-----
    python3 scripts/record_swin_fixture.py OUT_DIR

writes ``OUT_DIR/swin_w7_56px.safetensors`` and ``OUT_DIR/swin_w4_36px.safetensors``.
Example:

    python3 scripts/record_swin_fixture.py models/tests/fixtures
"""

import json
import os
import sys

SEED = 0
NUM_CLASSES = 10
BATCH = 2
MIN_SENSITIVITY = 1e-2

FIXTURES = {
    "swin_w7_56px": dict(
        img_size=56, patch_size=4, in_chans=3, num_classes=NUM_CLASSES, embed_dim=8,
        depths=(2, 2, 2, 2), num_heads=(2, 2, 4, 8), window_size=7, mlp_ratio=4.0,
        qkv_bias=True, drop_rate=0.0, proj_drop_rate=0.0, attn_drop_rate=0.0,
        drop_path_rate=0.1,
    ),
    "swin_w4_36px": dict(
        img_size=36, patch_size=4, in_chans=3, num_classes=NUM_CLASSES, embed_dim=8,
        depths=(2, 2, 1, 1), num_heads=(2, 2, 4, 8), window_size=4, mlp_ratio=4.0,
        qkv_bias=True, drop_rate=0.0, proj_drop_rate=0.0, attn_drop_rate=0.0,
        drop_path_rate=0.1,
    ),
}


def fail(msg):
    print(f"error: {msg}", file=sys.stderr)
    sys.exit(1)


def perturb(model, torch):
    """Replace timm's constant initial values (see the module docstring)."""
    for module in model.modules():
        if isinstance(module, torch.nn.LayerNorm):
            module.weight.copy_(1.0 + 0.2 * torch.randn_like(module.weight))
            module.bias.copy_(0.1 * torch.randn_like(module.bias))
        elif isinstance(module, (torch.nn.Linear, torch.nn.Conv2d)):
            if isinstance(module, torch.nn.Linear):
                fan_in = module.weight.shape[1]
                module.weight.copy_(torch.randn_like(module.weight) / fan_in ** 0.5)
            if module.bias is not None:
                module.bias.copy_(0.1 * torch.randn_like(module.bias))
    for name, p in model.named_parameters():
        if name.endswith("relative_position_bias_table"):
            p.copy_(0.5 * torch.randn_like(p))


def sensitivity(model, x, logits, torch):
    """How much the logits move when a part of the window attention is broken."""
    from timm.models import swin_transformer as st

    blocks = [b for stage in model.layers for b in stage.blocks]
    out = {}

    # 1. No shifted-window mask.
    saved = [b.attn_mask for b in blocks]
    if not any(m is not None for m in saved):
        fail("no block of this configuration has a shifted-window mask")
    for b in blocks:
        b.attn_mask = None
    out["without_mask"] = (model(x) - logits).abs().max().item()
    for b, m in zip(blocks, saved):
        b.attn_mask = m

    # 2. Relative position bias with query and key swapped.
    saved = [b.attn.relative_position_index.clone() for b in blocks]
    for b in blocks:
        b.attn.relative_position_index.copy_(b.attn.relative_position_index.t().clone())
    out["transposed_relative_position"] = (model(x) - logits).abs().max().item()
    for b, idx in zip(blocks, saved):
        b.attn.relative_position_index.copy_(idx)

    # 3. Cyclic shift not undone after attention.
    original_roll = torch.roll

    def roll_forward_only(t, shifts, dims):
        if all(s < 0 for s in shifts):
            return original_roll(t, shifts=shifts, dims=dims)
        return t

    st.torch.roll = roll_forward_only
    try:
        out["without_reverse_shift"] = (model(x) - logits).abs().max().item()
    finally:
        st.torch.roll = original_roll

    for k, v in out.items():
        print(f"  sensitivity {k}: max |logits change| = {v:.3e}")
        if not v > MIN_SENSITIVITY:
            fail(f"fixture is not sensitive to {k}: {v:.3e} <= {MIN_SENSITIVITY}")
    return out


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        print("usage: python3 scripts/record_swin_fixture.py OUT_DIR", file=sys.stderr)
        sys.exit(2)
    out_dir = sys.argv[1]

    import timm
    import torch
    from safetensors.torch import save_file
    from timm.models.swin_transformer import SwinTransformer

    print(f"torch {torch.__version__}, timm {timm.__version__}")
    torch.set_grad_enabled(False)

    # Reference: the full models' names, shapes and parameter counts.
    tiny = timm.create_model("swin_tiny_patch4_window7_224", pretrained=False)
    tiny_state = [[k, list(v.shape)] for k, v in tiny.state_dict().items()]
    if len(tiny_state) != len(list(tiny.named_parameters())):
        fail("swin_tiny state_dict holds more than its parameters (persistent buffers?)")
    counts = {}
    for name in ("swin_tiny_patch4_window7_224", "swin_small_patch4_window7_224",
                 "swin_base_patch4_window7_224"):
        m = tiny if name.startswith("swin_tiny") else timm.create_model(name, pretrained=False)
        counts[name] = sum(p.numel() for p in m.parameters())
        print(f"{name}: {counts[name]:,} parameters")
    del tiny

    os.makedirs(out_dir, exist_ok=True)
    for fixture, config in FIXTURES.items():
        print(f"== {fixture}: {config}")
        torch.manual_seed(SEED)
        model = SwinTransformer(**config).float().eval()
        if model.layers[0].blocks[0].attn.fused_attn:
            fail("timm chose fused attention; run without TIMM_FUSED_ATTN set")
        perturb(model, torch)
        x = torch.randn(BATCH, config["in_chans"], config["img_size"], config["img_size"])

        stages = []
        h = model.patch_embed(x)
        for stage in model.layers:
            h = stage(h)
            stages.append(h.contiguous())
        logits = model(x)
        direct = model.forward_head(model.norm(h))
        if (direct - logits).abs().max().item() != 0.0:
            fail("stage-by-stage forward differs from model(x)")
        print(f"  logits {list(logits.shape)}, max |logits| {logits.abs().max().item():.4f}")
        for i, s in enumerate(stages):
            b = model.layers[i].blocks
            print(f"  stage{i}: {list(s.shape)}, windows "
                  f"{[tuple(blk.window_size) for blk in b]}, shifts {[tuple(blk.shift_size) for blk in b]}")
        sens = sensitivity(model, x, logits, torch)
        if (model(x) - logits).abs().max().item() != 0.0:
            fail("model not restored after the sensitivity checks")

        state = model.state_dict()
        params = dict(model.named_parameters())
        if set(state) != set(params):
            fail(f"state_dict keys differ from parameters: {set(state) ^ set(params)}")
        tensors = {k: v.detach().to(torch.float32).contiguous() for k, v in state.items()}
        tensors["input"] = x.contiguous()
        tensors["logits"] = logits.contiguous()
        for i, s in enumerate(stages):
            tensors[f"stage{i}"] = s
        metadata = {
            "config": json.dumps(config),
            "timm_version": timm.__version__,
            "torch_version": torch.__version__,
            "seed": str(SEED),
            "sensitivity": json.dumps(sens),
            "swin_tiny_state_dict": json.dumps(tiny_state),
            "param_counts": json.dumps(counts),
            "description": (
                f"timm SwinTransformer({json.dumps(config)}) with timm's init under "
                f"torch.manual_seed({SEED}), then Linear weights N(0,1/fan_in), LayerNorm weights 1+0.2N, LayerNorm/Linear/conv "
                "biases 0.1N, relative_position_bias_table 0.5N; float32 eval mode on CPU, "
                "eager window attention. input ~ N(0,1) [2,3,S,S]; stage{i} = NHWC output of "
                "layers[i]; logits = model(input). Parameters under timm state_dict keys, "
                "PyTorch layout."
            ),
        }
        path = os.path.join(out_dir, f"{fixture}.safetensors")
        save_file(tensors, path, metadata=metadata)
        n_params = sum(v.numel() for k, v in state.items())
        print(f"  wrote {path} ({os.path.getsize(path)} bytes, {n_params:,} parameters)")


if __name__ == "__main__":
    main()
