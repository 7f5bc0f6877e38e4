#!/usr/bin/env python3
"""Record the `torch.save` fixtures of the pickle import tests (models/tests/it/tier2/pth_import.rs):
the weights of two committed safetensors fixtures, saved as PyTorch users save them.

``swin_w4_36px.pth``     ``torch.save({"state_dict": state_dict, "epoch": 3})``: a training
                         checkpoint (zip format of PyTorch >= 1.6), the state dict one level down;
``bert_base_w24.bin``    ``torch.save(state_dict, _use_new_zipfile_serialization=False)``: the
                         legacy pickle of ``pytorch_model.bin`` files, transformers' keys.

The tests load them and compare the logits with the safetensors fixtures'.

    pip install torch safetensors
    python3 scripts/record_pth_fixtures.py
"""

import pathlib

import torch
from safetensors.torch import load_file

OUT = pathlib.Path(__file__).resolve().parent.parent / "models/tests/fixtures"


def main():
    swin = load_file(str(OUT / "swin_w4_36px.safetensors"))
    swin = {k: v for k, v in swin.items() if k not in ("input", "logits") and not k.startswith("stage")}
    torch.save({"state_dict": swin, "epoch": 3}, OUT / "swin_w4_36px.pth")

    bert = load_file(str(OUT / "grads_bert_base_w24.safetensors"))
    recorded = ("grad.", "bf16.", "logits", "loss", "input_ids", "token_type_ids", "attention_mask",
                "labels")
    bert = {k: v for k, v in bert.items() if not k.startswith(recorded)}
    torch.save(bert, OUT / "bert_base_w24.bin", _use_new_zipfile_serialization=False)
    for name in ("swin_w4_36px.pth", "bert_base_w24.bin"):
        print(f"wrote {OUT / name} ({(OUT / name).stat().st_size} bytes)")


if __name__ == "__main__":
    main()
