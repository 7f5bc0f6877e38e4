#!/usr/bin/env python3
"""Load burnacc's exported weights into the reference implementation and compare outputs.

burnacc writes ``model.safetensors`` with the reference library's ``state_dict`` keys
(torchvision ResNet, timm Swin, transformers BertForSequenceClassification) and, in the
metadata, ``library`` and ``reference_config`` (the reference model's constructor arguments).
This script rebuilds that model, loads the file with ``strict=True`` (every key, shape and
buffer must match), and

* given a file: runs it in eval mode on a seeded batch and prints the logits;
* given a folder written by the export test
  (``BURNACC_EXPORT_DIR=DIR cargo nextest run -p burnacc-models reference_export``): for each
  ``<name>.safetensors`` there, feeds the batch of ``<name>.io.safetensors`` (``input`` or
  ``input_ids``/``token_type_ids``/``attention_mask``) and fails unless the reference's logits
  equal burnacc's (``logits``) within 1e-4 of their scale. Those models took one SGD step in
  burnacc first, so batch norm's running statistics and counters are burnacc's too.

    pip install torch torchvision timm transformers safetensors
    python3 scripts/check_export.py runs/quickstart/run-1/model.safetensors
    python3 scripts/check_export.py DIR
"""

import json
import pathlib
import sys

import torch
from safetensors import safe_open
from safetensors.torch import load_file

TOLERANCE = 1e-4


def torchvision_resnet(c):
    from torch import nn
    from torchvision.models.resnet import BasicBlock, Bottleneck, ResNet

    block = BasicBlock if c["block"] == "basic" else Bottleneck

    class Net(ResNet):
        def __init__(self):
            nn.Module.__init__(self)
            self._norm_layer = nn.BatchNorm2d
            self.inplanes, self.dilation, self.groups, self.base_width = c["width"], 1, 1, 64
            if c["small_input_stem"]:
                self.conv1 = nn.Conv2d(c["in_channels"], c["width"], 3, 1, 1, bias=False)
                self.maxpool = nn.Identity()
            else:
                self.conv1 = nn.Conv2d(c["in_channels"], c["width"], 7, 2, 3, bias=False)
                self.maxpool = nn.MaxPool2d(3, 2, 1)
            self.bn1 = nn.BatchNorm2d(c["width"])
            self.relu = nn.ReLU(inplace=True)
            w = c["width"]
            self.layer1 = self._make_layer(block, w, c["layers"][0])
            self.layer2 = self._make_layer(block, 2 * w, c["layers"][1], stride=2)
            self.layer3 = self._make_layer(block, 4 * w, c["layers"][2], stride=2)
            self.layer4 = self._make_layer(block, 8 * w, c["layers"][3], stride=2)
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(8 * w * block.expansion, c["num_classes"])

    return Net()


def timm_swin(c):
    from timm.models.swin_transformer import SwinTransformer

    return SwinTransformer(**c)


class BertClassifier(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        from transformers import BertConfig, BertForSequenceClassification

        self.inner = BertForSequenceClassification(BertConfig(**c))

    def forward(self, input_ids, token_type_ids, attention_mask):
        out = self.inner(input_ids=input_ids, token_type_ids=token_type_ids,
                         attention_mask=attention_mask)
        return out.logits


BUILDERS = {"torchvision": torchvision_resnet, "timm": timm_swin, "transformers": BertClassifier}


def load(path):
    """The reference model of `path`, its weights loaded strictly, in eval mode."""
    with safe_open(str(path), "pt") as f:
        meta = f.metadata() or {}
    if "library" not in meta or "reference_config" not in meta:
        sys.exit(f"{path}: no library/reference_config metadata (not a burnacc export?)")
    config = json.loads(meta["reference_config"])
    model = BUILDERS[meta["library"]](config)
    target = model.inner if isinstance(model, BertClassifier) else model
    state = load_file(str(path))
    # transformers keeps position_ids as a non-persistent buffer; nothing else may differ.
    result = target.load_state_dict(state, strict=False)
    missing = [k for k in result.missing_keys if not k.endswith("position_ids")]
    if missing or result.unexpected_keys:
        sys.exit(f"{path}: missing {missing}, unexpected {result.unexpected_keys}")
    return model.eval(), meta["library"], config


def check_folder(folder):
    failures = 0
    for path in sorted(folder.glob("*.safetensors")):
        if path.name.endswith(".io.safetensors"):
            continue
        model, library, _ = load(path)
        io = load_file(str(path.with_name(path.stem + ".io.safetensors")))
        batch = [io["input"]] if "input" in io else [
            io["input_ids"], io["token_type_ids"], io["attention_mask"]]
        with torch.no_grad():
            logits = model(*batch)
        expected = io["logits"]
        error = ((logits - expected).abs().max() / expected.abs().max()).item()
        ok = error <= TOLERANCE
        failures += not ok
        print(f"{path.name} ({library}): strict load ok, logits relative error {error:.2e} "
              f"{'ok' if ok else 'FAILED'}")
    if failures:
        sys.exit(f"{failures} export(s) disagree with their reference")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    target = pathlib.Path(sys.argv[1])
    if target.is_dir():
        check_folder(target)
        return
    model, library, config = load(target)
    torch.manual_seed(0)
    if library == "transformers":
        ids = torch.randint(1, config["vocab_size"], (2, 16))
        batch = [ids, torch.zeros_like(ids), torch.ones_like(ids)]
    elif library == "timm":
        batch = [torch.randn(2, config["in_chans"], config["img_size"], config["img_size"])]
    else:
        batch = [torch.randn(2, config["in_channels"], 64, 64)]
    with torch.no_grad():
        print(f"{target} ({library}): strict load ok; logits on a seeded batch:\n{model(*batch)}")


if __name__ == "__main__":
    main()
