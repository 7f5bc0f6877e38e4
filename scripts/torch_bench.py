#!/usr/bin/env python3
"""The PyTorch side of the scoreboard: the bench recipes' workloads in PyTorch.

ResNet-50 (torchvision, SGD momentum 0.9, lr 0.1, weight decay 1e-4, channels-last),
BERT-base sequence classification (transformers, AdamW lr 2e-5, weight decay 0.01) and Swin-T
(timm `swin_tiny_patch4_window7_224`, AdamW lr 1e-3, weight decay 0.05), on synthetic batches
kept on the device, in f32 and under bf16 autocast, eager and with torch.compile — the same
shapes and optimizers as configs/bench/*.toml (Swin-T only when --models names it). Each
configuration runs in its own process with a time limit. Writes JSON lines with the fields of
burnacc's `bench` (crates/bench/src/record.rs), so `bench --merge` shows both in one table
and chart.

  python3 scripts/torch_bench.py --out torch.jsonl
  python3 scripts/torch_bench.py --models resnet50 --resnet-batch 2 --image-size 64 \
      --modes eager --steps 2 --windows 1 --out /tmp/torch.jsonl     # CPU smoke run
  python3 scripts/torch_bench.py --models swin-t --swin-batch 2 --modes eager \
      --precisions f32 --steps 1 --windows 1 --out /tmp/swin.jsonl   # Swin-T on the CPU
"""

import argparse
import json
import os
import subprocess
import sys
import time

RECORD_LINE = "BENCH_RECORD "


def emit(record):
    print(RECORD_LINE + json.dumps(record), flush=True)


def build(model_name, case, device):
    import torch

    if model_name == "resnet50":
        import torchvision

        model = torchvision.models.resnet50(num_classes=1000).to(device)
        model = model.to(memory_format=torch.channels_last)
        batch, size = case["resnet_batch"], case["image_size"]
        x = torch.randn(batch, 3, size, size, device=device).to(memory_format=torch.channels_last)
        y = torch.arange(batch, device=device) % 1000
        optim = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
        loss_fn = torch.nn.CrossEntropyLoss()

        def forward(m):
            return loss_fn(m(x), y)

        return model, optim, forward, batch, f"{size}px"
    if model_name == "bert-base":
        from transformers import BertConfig, BertForSequenceClassification

        config = BertConfig(num_labels=2)
        model = BertForSequenceClassification(config).to(device)
        batch, seq = case["bert_batch"], case["seq_len"]
        ids = (torch.arange(batch * seq, device=device) * 7919 + 101) % config.vocab_size
        ids = ids.reshape(batch, seq)
        mask = torch.ones_like(ids)
        labels = torch.arange(batch, device=device) % 2
        optim = torch.optim.AdamW(model.parameters(), lr=2e-5, weight_decay=0.01)

        def forward(m):
            return m(input_ids=ids, attention_mask=mask, labels=labels).loss

        return model, optim, forward, batch, f"seq{seq}"
    if model_name == "swin-t":
        import timm

        # The image size must suit patch 4 and window 7 (224 does), as burnacc requires.
        batch, size = case["swin_batch"], case["swin_image_size"]
        model = timm.create_model("swin_tiny_patch4_window7_224", pretrained=False,
                                  num_classes=1000, img_size=size).to(device)
        x = torch.randn(batch, 3, size, size, device=device)
        y = torch.arange(batch, device=device) % 1000
        optim = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.05)
        loss_fn = torch.nn.CrossEntropyLoss()

        def forward(m):
            return loss_fn(m(x), y)

        return model, optim, forward, batch, f"{size}px"
    raise SystemExit(f"unknown model {model_name!r} (resnet50, bert-base, swin-t)")


def one(case, started):
    """Runs one configuration in this process, printing the record as it fills in."""
    import torch

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    model_name, mode, precision = case["model"], case["mode"], case["precision"]
    model, optim, forward, batch, shape = build(model_name, case, device)
    model.train()
    cuda = torch.version.cuda or "cpu"
    record = {
        "framework": "pytorch", "model": model_name, "mode": mode, "precision": precision,
        "device": "cuda:0" if device.type == "cuda" else "cpu", "batch": batch, "input": shape,
        "status": None, "init_secs": None, "first_step_secs": None, "warmup_secs": None,
        "step_secs": None, "window_step_secs": [], "samples_per_sec": None,
        "peak_memory_bytes": None, "steps_done": 0,
        "stack": f"torch {torch.__version__} (CUDA {cuda})",
    }
    autocast_dtype = {"f32": None, "bf16": torch.bfloat16, "f16": torch.float16}[precision]
    scaler = torch.amp.GradScaler(device.type, enabled=precision == "f16")
    run_forward = torch.compile(forward) if mode == "compile" else forward

    def step():
        optim.zero_grad(set_to_none=True)
        with torch.autocast(device.type, dtype=autocast_dtype or torch.float32,
                            enabled=autocast_dtype is not None):
            loss = run_forward(model)
        scaler.scale(loss).backward()
        scaler.step(optim)
        scaler.update()

    sync()
    record["init_secs"] = time.perf_counter() - started
    emit(record)
    for i in range(case["warmup"]):
        t = time.perf_counter()
        step()
        sync()
        if i == 0:
            record["first_step_secs"] = time.perf_counter() - t
        record["steps_done"] += 1
        emit(record)
    record["warmup_secs"] = time.perf_counter() - started
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    for _ in range(case["windows"]):
        t = time.perf_counter()
        for _ in range(case["steps"]):
            step()
        sync()
        record["window_step_secs"].append((time.perf_counter() - t) / case["steps"])
        record["steps_done"] += case["steps"]
        emit(record)
    windows = sorted(record["window_step_secs"])
    mid = len(windows) // 2
    median = windows[mid] if len(windows) % 2 else (windows[mid - 1] + windows[mid]) / 2
    record["step_secs"] = median
    record["samples_per_sec"] = batch / median
    if device.type == "cuda":
        # The caching allocator's reservation, comparable to CubeCL's pool reservation.
        record["peak_memory_bytes"] = torch.cuda.max_memory_reserved()
    else:
        import resource

        record["peak_memory_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    record["status"] = "ok"
    emit(record)


def last_record(stdout):
    records = [json.loads(line[len(RECORD_LINE):]) for line in (stdout or "").splitlines()
               if line.startswith(RECORD_LINE)]
    return records[-1] if records else None


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default="resnet50,bert-base",
                   help="comma-separated: resnet50, bert-base, swin-t")
    p.add_argument("--modes", default="eager,compile")
    p.add_argument("--precisions", default="f32,bf16")
    p.add_argument("--cases", help="mode:precision pairs instead of --modes × --precisions, "
                   "e.g. eager:f32,eager:bf16,compile:bf16")
    p.add_argument("--resnet-batch", type=int, default=256)
    p.add_argument("--image-size", type=int, default=224)
    p.add_argument("--bert-batch", type=int, default=128)
    p.add_argument("--seq-len", type=int, default=128)
    p.add_argument("--swin-batch", type=int, default=128)
    p.add_argument("--swin-image-size", type=int, default=224)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--windows", type=int, default=3)
    p.add_argument("--timeout", type=float, default=600)
    p.add_argument("--out", required=True)
    p.add_argument("--one", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.one:
        one(json.loads(args.one), started=time.perf_counter())
        return
    records = []
    if args.cases:
        pairs = [tuple(c.split(":")) for c in args.cases.split(",")]
    else:
        pairs = [(m, p) for m in args.modes.split(",") for p in args.precisions.split(",")]
    for model_name in args.models.split(","):
        for mode, precision in pairs:
            case = dict(vars(args), model=model_name, mode=mode, precision=precision)
            case.pop("one")
            print(f"torch bench: {model_name} {mode} {precision} …", file=sys.stderr)
            cmd = [sys.executable, os.path.abspath(__file__), "--out", args.out,
                   "--one", json.dumps(case)]
            try:
                done = subprocess.run(cmd, capture_output=True, text=True,
                                      timeout=args.timeout)
                record = last_record(done.stdout)
                if done.returncode != 0 or record is None or record["status"] != "ok":
                    record = record or {"framework": "pytorch", "model": model_name,
                                        "mode": mode, "precision": precision}
                    tail = [l for l in done.stderr.splitlines() if l.strip()][-1:]
                    record.update(status="failed", reason=" ".join(tail)[:300])
            except subprocess.TimeoutExpired as e:
                out = e.stdout.decode() if isinstance(e.stdout, bytes) else e.stdout
                record = last_record(out) or {"framework": "pytorch", "model": model_name,
                                              "mode": mode, "precision": precision}
                record.update(status="timeout",
                              reason=f"killed after {args.timeout:.0f} s")
            record.setdefault("batch", 0)
            record.setdefault("input", "")
            record.setdefault("device", "")
            record.setdefault("steps_done", 0)
            print(f"torch bench: {model_name} {mode} {precision}: {record['status']} "
                  f"{record.get('samples_per_sec')}", file=sys.stderr)
            records.append(record)
            tmp = args.out + ".partial"
            with open(tmp, "w") as f:
                f.writelines(json.dumps(r) + "\n" for r in records)
            os.replace(tmp, args.out)


if __name__ == "__main__":
    main()
