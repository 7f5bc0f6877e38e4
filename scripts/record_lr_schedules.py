#!/usr/bin/env python3
"""Record the learning rates of PyTorch's and Hugging Face's schedules, for
crates/recipe/tests/it/tier1/lr_schedules.rs.

Each case runs a one-parameter SGD for ``total`` steps and records the rate the
optimizer holds during each step (read before ``optimizer.step()``, the
scheduler stepping after it), the way burnacc's ``learning_rate(optim, step,
total)`` is defined. ``recipe`` holds the [optim] keys that select the same
schedule in a burnacc recipe.

    pip install torch transformers
    python3 scripts/record_lr_schedules.py   # writes crates/recipe/tests/fixtures/lr_schedules.json
"""

import json
import math
import pathlib

import torch
from transformers import get_linear_schedule_with_warmup

OUT = pathlib.Path(__file__).resolve().parent.parent / "crates/recipe/tests/fixtures/lr_schedules.json"


def record(lr, total, make):
    param = torch.nn.Parameter(torch.zeros(1))
    optimizer = torch.optim.SGD([param], lr=lr)
    scheduler = make(optimizer)
    rates = []
    for _ in range(total):
        rates.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    return rates


def main():
    S = torch.optim.lr_scheduler
    cases = [
        {
            "name": "StepLR(step_size=3, gamma=0.5)",
            "recipe": {"lr": 0.1, "schedule": "step", "step_size": 3, "gamma": 0.5},
            "total": 12,
            "rates": record(0.1, 12, lambda o: S.StepLR(o, step_size=3, gamma=0.5)),
        },
        {
            "name": "MultiStepLR(milestones=[2, 5, 9], gamma=0.1)",
            "recipe": {"lr": 0.1, "schedule": "multistep", "milestones": [2, 5, 9], "gamma": 0.1},
            "total": 12,
            "rates": record(0.1, 12, lambda o: S.MultiStepLR(o, milestones=[2, 5, 9], gamma=0.1)),
        },
        {
            "name": "CosineAnnealingLR(T_max=11, eta_min=0.001)",
            "recipe": {"lr": 0.1, "schedule": "cosine", "min_lr": 0.001},
            "total": 12,
            "rates": record(0.1, 12, lambda o: S.CosineAnnealingLR(o, T_max=11, eta_min=0.001)),
        },
        {
            "name": "OneCycleLR(max_lr=0.01, total_steps=20)",
            "recipe": {"lr": 0.01, "schedule": "onecycle"},
            "total": 20,
            "rates": record(0.01, 20, lambda o: S.OneCycleLR(o, max_lr=0.01, total_steps=20)),
        },
        {
            "name": "OneCycleLR(max_lr=0.5, total_steps=17, pct_start=0.25, div_factor=10, final_div_factor=100)",
            "recipe": {
                "lr": 0.5,
                "schedule": "onecycle",
                "pct_start": 0.25,
                "div_factor": 10.0,
                "final_div_factor": 100.0,
            },
            "total": 17,
            "rates": record(
                0.5,
                17,
                lambda o: S.OneCycleLR(
                    o, max_lr=0.5, total_steps=17, pct_start=0.25, div_factor=10, final_div_factor=100
                ),
            ),
        },
        {
            # Hugging Face's warm-up starts at 0 (one step before burnacc's, which starts at
            # lr / warmup): the test compares the steps after warm-up.
            "name": "get_linear_schedule_with_warmup(num_warmup_steps=3, num_training_steps=12)",
            "recipe": {"lr": 2e-5, "schedule": "linear", "warmup_steps": 3},
            "total": 12,
            "rates": record(2e-5, 12, lambda o: get_linear_schedule_with_warmup(o, 3, 12)),
        },
        {
            "name": "LambdaLR(constant)",
            "recipe": {"lr": 0.03, "schedule": "constant"},
            "total": 5,
            "rates": record(0.03, 5, lambda o: S.LambdaLR(o, lambda step: 1.0)),
        },
    ]
    OUT.parent.mkdir(parents=True, exist_ok=True)
    meta = {"torch": torch.__version__}
    try:
        import transformers

        meta["transformers"] = transformers.__version__
    except ImportError:
        pass
    OUT.write_text(json.dumps({"versions": meta, "cases": cases}, indent=1) + "\n")
    print(f"wrote {OUT} ({len(cases)} cases)")
    assert all(math.isfinite(r) for c in cases for r in c["rates"])


if __name__ == "__main__":
    main()
