#!/usr/bin/env python3
"""Record torchvision ResNet fixtures for the ResNet import and parity tests
(models/tests/it/tier2/resnet_import.rs).

Two ResNets built from torchvision's own ``BasicBlock``, ``Bottleneck`` and
``ResNet._make_layer`` (so every key is torchvision's), at reduced width so the
files stay small:

``resnet18_w8``   BasicBlock, layers (2, 2, 2, 2), stem width 8, 10 classes
``resnet50_w4``   Bottleneck, layers (3, 4, 6, 3), stem width 4, 10 classes

Each fixture is one safetensors file holding the model's ``state_dict`` (float32,
``num_batches_tracked`` int64), with batch norm's affine parameters and running
statistics drawn away from their initial values, plus

* ``input``   float32 [2, 3, 32, 32]   a fixed standard-normal batch;
* ``logits``  float32 [2, 10]          ``model.eval()(input)`` (running statistics).

The metadata holds ``config`` (block, layers, width, num_classes) and the
versions used.

    pip install torch torchvision safetensors
    python3 scripts/record_resnet_fixture.py   # writes models/tests/fixtures/resnet*_w*.safetensors
"""

import json
import pathlib

import torch
import torchvision
from safetensors.torch import save_file
from torch import nn
from torchvision.models.resnet import BasicBlock, Bottleneck, ResNet

OUT = pathlib.Path(__file__).resolve().parent.parent / "models/tests/fixtures"

CONFIGS = {
    "resnet18_w8": dict(block="basic", layers=[2, 2, 2, 2], width=8, num_classes=10),
    "resnet50_w4": dict(block="bottleneck", layers=[3, 4, 6, 3], width=4, num_classes=10),
}


class NarrowResNet(ResNet):
    """torchvision's ResNet with the stem width as a parameter (64 in torchvision)."""

    def __init__(self, block, layers, width, num_classes):
        nn.Module.__init__(self)
        self._norm_layer = nn.BatchNorm2d
        self.inplanes = width
        self.dilation = 1
        self.groups = 1
        self.base_width = 64  # bottleneck inner width = planes, as torchvision's resnet50
        self.conv1 = nn.Conv2d(3, width, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(block, width, layers[0])
        self.layer2 = self._make_layer(block, width * 2, layers[1], stride=2)
        self.layer3 = self._make_layer(block, width * 4, layers[2], stride=2)
        self.layer4 = self._make_layer(block, width * 8, layers[3], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(width * 8 * block.expansion, num_classes)


def record(name, config):
    torch.manual_seed(0)
    block = BasicBlock if config["block"] == "basic" else Bottleneck
    model = NarrowResNet(block, config["layers"], config["width"], config["num_classes"])
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, nn.BatchNorm2d):
                module.weight.copy_(1.0 + 0.2 * torch.randn_like(module.weight))
                module.bias.copy_(0.1 * torch.randn_like(module.bias))
                module.running_mean.copy_(0.1 * torch.randn_like(module.running_mean))
                module.running_var.copy_(0.5 + torch.rand_like(module.running_var))
                module.num_batches_tracked.fill_(7)
    model.eval()
    x = torch.randn(2, 3, 32, 32)
    with torch.no_grad():
        logits = model(x)
    tensors = {k: v.contiguous() for k, v in model.state_dict().items()}
    tensors["input"] = x
    tensors["logits"] = logits
    meta = {
        "config": json.dumps(config),
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
    }
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"{name}.safetensors"
    save_file(tensors, str(path), metadata=meta)
    print(f"wrote {path} ({path.stat().st_size} bytes)")


def main():
    for name, config in CONFIGS.items():
        record(name, config)


if __name__ == "__main__":
    main()
