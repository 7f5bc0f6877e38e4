#!/usr/bin/env python3
"""Record training-step fixtures for the gradient parity tests
(models/tests/it/tier2/gradient_parity.rs): one loss, its logits and the gradient of every
parameter, computed by the reference implementations on PyTorch's CPU.

Fixtures (models/tests/fixtures/grads_*.safetensors)
----------------------------------------------------
``grads_resnet50_w4``   torchvision ResNet-50 structure (Bottleneck, 3-4-6-3) at stem width 4,
                        the weights of ``resnet50_w4.safetensors`` (record_resnet_fixture.py),
                        **train mode**: batch norm normalises with the batch's statistics and
                        updates its running statistics (momentum 0.1, unbiased variance).
                        Batch 4 of 64 px, so the last stage's statistics cover 16 values.
``grads_swin_w7_56px``  timm Swin-T layout (the weights of ``swin_w7_56px.safetensors``,
                        record_swin_fixture.py), drop path off, batch 2 of 56 px.
``grads_bert_base_w24`` transformers ``BertForSequenceClassification`` with BERT-base's structure
                        (12 layers, 12 heads, feed-forward 4x) at hidden width 24, 3 labels.
``grads_bert_large_w16`` the same with BERT-large's structure (24 layers, 16 heads) at width 16.
                        The BERT batches have 3 rows of 12 tokens, the last two padded
                        (attention_mask 0) and segments A/B in ``token_type_ids``.

The BERT weights are drawn here and stored in the fixture under transformers' keys
(``bert.encoder.layer.0.attention.self.query.weight``, ``[out, in]``): Linear weights
N(0, 1/fan_in), embeddings N(0, 1), LayerNorm weights 1 + 0.2 N(0, 1), every bias 0.1 N(0, 1)
(transformers' std 0.02 leaves the attention almost uniform, so a wrong mask or head split would
hardly show). Dropout is 0 everywhere.

Each fixture holds
* the batch: ``input`` float32 [B, 3, S, S] or ``input_ids``, ``token_type_ids``,
  ``attention_mask`` int64 [B, T]; ``labels`` int64 [B];
* ``logits`` float32 [B, classes] and ``loss`` float32 [1]: ``cross_entropy(logits, labels)``
  (mean), in train mode, f32;
* ``grad.<key>`` float32: the gradient of ``loss`` for every parameter, under the reference's
  ``state_dict`` key and in its layout (``Linear`` weights ``[out, in]``);
* ResNet only: ``running.<key>`` the batch norms' running statistics after that forward pass;
* ``bf16.logits``, ``bf16.loss``: a forward pass under
  ``torch.autocast("cpu", dtype=torch.bfloat16)`` on a copy (so the running statistics above
  are those of one f32 pass), and ``bf16.exact_logits`` the same pass in float64. It is the
  train-mode pass for Swin and BERT (no dropout: the same as eval mode) and the **eval-mode**
  pass for the ResNet (metadata ``bf16_mode``): train-mode batch norm amplifies bf16's rounding
  so much that PyTorch's own bf16 logits are 25% off the exact ones there;

and the metadata ``config`` (JSON), ``weights`` (the fixture file holding the weights), the
library versions.

    pip install torch torchvision timm transformers safetensors
    python3 scripts/record_grad_fixtures.py   # writes models/tests/fixtures/grads_*.safetensors

Never run in CI; the tests read only the committed files.
"""

import copy
import json
import pathlib
import sys

import torch
import torch.nn.functional as F
from safetensors import safe_open
from safetensors.torch import save_file

HERE = pathlib.Path(__file__).resolve().parent
OUT = HERE.parent / "models/tests/fixtures"
sys.path.insert(0, str(HERE))

SEED = 1
MAX_SENSITIVITY = 1e-5


def read_weights(name):
    """The parameters and buffers of an existing fixture (its extras left out)."""
    with safe_open(str(OUT / f"{name}.safetensors"), "pt") as f:
        return {k: f.get_tensor(k) for k in f.keys()}, json.loads(f.metadata()["config"])


def relative_error(got, expected, floor):
    """max |got - expected| over max(max |expected|, floor), as the Rust test measures it."""
    return ((got - expected).abs().max() / max(expected.abs().max().item(), floor)).item()


def grads_of(model, batch, labels):
    """Train-mode pass and backward on a copy of `model`: logits, loss, gradients, the copy."""
    model = copy.deepcopy(model)
    model.train()
    logits = model(*batch)
    loss = F.cross_entropy(logits, labels)
    loss.backward()
    grads = {key: p.grad.detach().clone() for key, p in model.named_parameters()}
    return logits.detach(), loss.detach().reshape(1), grads, model


def gradient_floor(grads):
    """The scale below which a gradient is compared absolutely: 1e-3 of the largest gradient
    (a gradient that is zero in exact arithmetic, such as BERT's key bias, is rounding noise)."""
    return 1e-3 * max(g.abs().max().item() for g in grads.values())


def worst_error(grads, reference):
    floor = gradient_floor(reference)
    return max(relative_error(grads[k].double(), reference[k], floor) for k in reference)


def step(model, batch, labels, perturbable=True, bf16_mode="train"):
    """The f32 step, computed in float64 (the exact answer an f32 implementation approximates),
    with PyTorch's own float32 error and the step's sensitivity to a change of the input at
    float32's rounding level (1e-7 relative) recorded; then the bf16 autocast pass on a copy."""
    double = copy.deepcopy(model).double()
    as_double = lambda t: t.double() if t.is_floating_point() else t
    logits, loss, grads, trained = grads_of(double, [as_double(t) for t in batch], labels)
    _, _, grads32, _ = grads_of(model, batch, labels)
    out = {"logits": logits.float(), "loss": loss.float()}
    out.update({f"grad.{k}": g.float() for k, g in grads.items()})
    out["_trained"] = trained
    out["_torch_f32_error"] = worst_error(grads32, grads)
    if perturbable:
        g = torch.Generator().manual_seed(SEED)
        nudged = [t.double() * (1 + 1e-7 * torch.randn(t.shape, generator=g, dtype=torch.float64))
                  for t in batch]
        _, _, grads_nudged, _ = grads_of(double, nudged, labels)
        out["_sensitivity"] = worst_error(grads_nudged, grads)
    bf16_model = copy.deepcopy(model).train(bf16_mode == "train")
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        logits = bf16_model(*batch)
        loss = F.cross_entropy(logits, labels)
    out["bf16.logits"] = logits.float()
    out["bf16.loss"] = loss.float().reshape(1)
    exact_model = copy.deepcopy(model).double().train(bf16_mode == "train")
    with torch.no_grad():
        out["bf16.exact_logits"] = exact_model(*[as_double(t) for t in batch]).float()
    out["_bf16_mode"] = bf16_mode
    return out


def resnet():
    from record_resnet_fixture import Bottleneck, NarrowResNet

    weights, config = read_weights("resnet50_w4")
    model = NarrowResNet(Bottleneck, config["layers"], config["width"], config["num_classes"])
    model.load_state_dict({k: v for k, v in weights.items() if k not in ("input", "logits")})
    # Train-mode ResNet gradients are ill-conditioned: a ReLU input within rounding of 0 makes
    # them jump when it flips sign, and batch norm over few channels couples every value, so a
    # 1e-7 change of the input moves some gradient by 3e-5 to 1e-2 of its scale depending on the
    # batch. The fixture keeps the best-conditioned of 30 batches, so that it measures the
    # implementation rather than the kinks; its sensitivity is recorded with it.
    candidates = []
    for seed in range(SEED, SEED + 30):
        g = torch.Generator().manual_seed(seed)
        x = torch.randn(4, 3, 64, 64, generator=g)
        labels = torch.randint(0, config["num_classes"], (4,), generator=g)
        candidates.append((step(model, (x,), labels, bf16_mode="eval"), x, labels))
    out, x, labels = min(candidates, key=lambda c: c[0]["_sensitivity"])
    for key, t in out["_trained"].state_dict().items():
        if key.endswith(("running_mean", "running_var")):
            out[f"running.{key}"] = t.float().clone()
    out.update(input=x, labels=labels)
    return out, config, "resnet50_w4.safetensors"


def swin():
    from timm.models.swin_transformer import SwinTransformer

    weights, config = read_weights("swin_w7_56px")
    config = dict(config, drop_path_rate=0.0)
    model = SwinTransformer(**config).float()
    params = {k: v for k, v in weights.items() if not k.startswith(("input", "logits", "stage"))}
    missing, unexpected = model.load_state_dict(params, strict=False)
    assert not unexpected and all("relative_position_index" in k or "attn_mask" in k for k in missing), missing
    x = weights["input"]
    labels = torch.randint(0, config["num_classes"], (x.shape[0],), generator=torch.Generator().manual_seed(SEED))
    out = step(model, (x,), labels)
    if out["_sensitivity"] > MAX_SENSITIVITY:
        sys.exit(f"the Swin step is ill-conditioned: {out['_sensitivity']:.2e}")
    out.update(input=x, labels=labels)
    return out, config, "swin_w7_56px.safetensors"


class Classifier(torch.nn.Module):
    """``BertForSequenceClassification`` taking positional tensors and returning the logits."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, input_ids, token_type_ids, attention_mask):
        return self.inner(
            input_ids=input_ids, token_type_ids=token_type_ids, attention_mask=attention_mask
        ).logits


def bert(layers, hidden, heads):
    from transformers import BertConfig, BertForSequenceClassification

    config = dict(
        vocab_size=96, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
        intermediate_size=4 * hidden, hidden_act="gelu", hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0, max_position_embeddings=32, type_vocab_size=2,
        layer_norm_eps=1e-12, num_labels=3,
    )
    torch.manual_seed(SEED)
    inner = BertForSequenceClassification(BertConfig(**config)).float()
    with torch.no_grad():
        for module in inner.modules():
            if isinstance(module, torch.nn.Linear):
                module.weight.copy_(torch.randn_like(module.weight) / module.weight.shape[1] ** 0.5)
                module.bias.copy_(0.1 * torch.randn_like(module.bias))
            elif isinstance(module, torch.nn.Embedding):
                module.weight.copy_(torch.randn_like(module.weight))
            elif isinstance(module, torch.nn.LayerNorm):
                module.weight.copy_(1.0 + 0.2 * torch.randn_like(module.weight))
                module.bias.copy_(0.1 * torch.randn_like(module.bias))
    g = torch.Generator().manual_seed(SEED)
    rows, seq = 3, 12
    input_ids = torch.randint(1, config["vocab_size"], (rows, seq), generator=g)
    lengths = [seq, 9, 5]
    attention_mask = torch.tensor([[1] * n + [0] * (seq - n) for n in lengths])
    token_type_ids = torch.tensor([[0] * (n // 2) + [1] * (seq - n // 2) for n in lengths]) * attention_mask
    input_ids = input_ids * attention_mask  # [PAD] = 0 after each sample
    labels = torch.randint(0, config["num_labels"], (rows,), generator=g)
    model = Classifier(inner)
    out = step(model, (input_ids, token_type_ids, attention_mask), labels, perturbable=False)
    out = {k.replace("grad.inner.", "grad."): v for k, v in out.items()}
    out.update({k: v.detach().clone() for k, v in inner.state_dict().items() if not k.endswith("position_ids")})
    out.update(input_ids=input_ids, token_type_ids=token_type_ids, attention_mask=attention_mask, labels=labels)
    return out, config, None


def main():
    import timm
    import torchvision
    import transformers

    torch.set_num_threads(1)  # one summation order, whatever the machine
    fixtures = {
        "grads_resnet50_w4": resnet,
        "grads_swin_w7_56px": swin,
        "grads_bert_base_w24": lambda: bert(12, 24, 12),
        "grads_bert_large_w16": lambda: bert(24, 16, 16),
    }
    for name, record in fixtures.items():
        tensors, config, weights = record()
        tensors.pop("_trained")
        stats = {k[1:]: tensors.pop(k) for k in ("_torch_f32_error", "_sensitivity") if k in tensors}
        bf16_mode = tensors.pop("_bf16_mode")
        meta = {
            "bf16_mode": bf16_mode,
            "stats": json.dumps(stats),
            "config": json.dumps(config),
            "weights": weights or f"{name}.safetensors",
            "torch": torch.__version__,
            "torchvision": torchvision.__version__,
            "timm": timm.__version__,
            "transformers": transformers.__version__,
        }
        path = OUT / f"{name}.safetensors"
        save_file({k: v.contiguous() for k, v in tensors.items()}, str(path), metadata=meta)
        print(f"wrote {path} ({path.stat().st_size} bytes), loss {tensors['loss'].item():.6f}, "
              f"bf16 loss {tensors['bf16.loss'].item():.6f}, {stats}")


if __name__ == "__main__":
    main()
