#!/usr/bin/env bash
# The CPU scoreboard: burnacc's `bench` (eager and acc, f32) and the same workloads in PyTorch
# (scripts/torch_bench.py, eager f32), ResNet-50, BERT-base and Swin-T at small shapes that a
# CPU finishes, in one run on this machine, merged into one table and chart.
#
#   scripts/cpu_scoreboard.sh                              # writes cpu-results/
#   OUT=/tmp/sb STEPS=1 WINDOWS=1 scripts/cpu_scoreboard.sh   # shorter; any variable below
#
# It uses target/release/bench (or $CARGO_TARGET_DIR/release/bench), and builds it with
# `cargo build --release --bin bench` only when it is missing (BUILD=1 builds it anyway, a
# no-op when it is up to date; BENCH=path uses another binary). Both sides train the same
# shapes: burnacc's through the --set overrides in SETS (`stem:key=value` applies to the recipe
# whose file stem is `stem`, later overrides win), PyTorch's through TORCH_SHAPES; change the two
# together. Every configuration has a time limit, so a slow one is reported as a timeout with
# the steps it finished instead of stalling the run.
#
# $OUT (default cpu-results/) receives machine.txt, results.jsonl (burnacc), torch.jsonl
# (PyTorch), then table.md and chart.png of both, merged by `bench --merge`, and report.txt
# (the merged table as printed). With the defaults, expect roughly half an hour on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=${OUT:-cpu-results}
RECIPES=${RECIPES:-"configs/bench/resnet50.toml configs/bench/bert_base.toml configs/bench/swin_t.toml"}
MODES=${MODES:-eager,acc}
PRECISIONS=${PRECISIONS:-f32}
WARMUP=${WARMUP:-1}
STEPS=${STEPS:-2}
WINDOWS=${WINDOWS:-3}
CASE_TIMEOUT=${CASE_TIMEOUT:-600}         # seconds per burnacc configuration
SETS=${SETS:-"train.batch_size=4 bert_base:data.max_length=128 resnet50:train.batch_size=8 resnet50:data.image_size=64"}
TORCH_MODELS=${TORCH_MODELS:-resnet50,bert-base,swin-t}   # PyTorch's names of RECIPES' models
TORCH_CASES=${TORCH_CASES:-eager:f32}
TORCH_SHAPES=${TORCH_SHAPES:-"--resnet-batch 8 --image-size 64 --bert-batch 4 --seq-len 128 --swin-batch 4 --swin-image-size 224"}
TORCH_TIMEOUT=${TORCH_TIMEOUT:-600}       # seconds per PyTorch configuration
TORCH_ARGS=${TORCH_ARGS:-}                # more scripts/torch_bench.py arguments
BENCH=${BENCH:-${CARGO_TARGET_DIR:-target}/release/bench}
BUILD=${BUILD:-0}                         # 1: cargo build even when $BENCH exists

if [ "$BUILD" = 1 ] || [ ! -x "$BENCH" ]; then
    cargo build --release --bin bench
fi
[ -x "$BENCH" ] || { echo "error: $BENCH is missing after the build" >&2; exit 1; }

mkdir -p "$OUT"
# A previous run's results must not be merged into this one's table.
rm -f "$OUT/results.jsonl" "$OUT/torch.jsonl"
{
    date -u +"date: %Y-%m-%d %H:%M UTC"
    echo "git: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
    lscpu | sed -n 's/^Model name:[[:space:]]*/cpu: /p'
    echo "nproc: $(nproc)"
    free -g
    rustc -V 2>/dev/null || echo "no rustc"
    python3 -c 'import torch; print("torch", torch.__version__, "threads", torch.get_num_threads())' \
        2>/dev/null || echo "no torch"
} | tee "$OUT/machine.txt"

sets=(--set backend.device=cpu)
for s in $SETS; do sets+=(--set "$s"); done
# shellcheck disable=SC2086
"$BENCH" $RECIPES "${sets[@]}" --modes "$MODES" --precisions "$PRECISIONS" \
    --warmup "$WARMUP" --steps "$STEPS" --windows "$WINDOWS" --timeout "$CASE_TIMEOUT" \
    --out "$OUT" || echo "bench stopped early; keeping its results"

# torch.set_num_threads is left alone: PyTorch's default uses every physical core (both, on a
# 2-core machine; machine.txt records the count).
torch_args=(--models "$TORCH_MODELS" --cases "$TORCH_CASES" --warmup "$WARMUP"
    --steps "$STEPS" --windows "$WINDOWS" --timeout "$TORCH_TIMEOUT" --out "$OUT/torch.jsonl")
# shellcheck disable=SC2086
python3 scripts/torch_bench.py "${torch_args[@]}" $TORCH_SHAPES $TORCH_ARGS \
    || echo "torch bench stopped early; keeping its results"

# The merge rewrites table.md and chart.png in $OUT from both result files; results.jsonl and
# torch.jsonl stay as measured.
merge=()
[ -s "$OUT/torch.jsonl" ] && merge+=(--merge "$OUT/torch.jsonl")
[ -s "$OUT/results.jsonl" ] && merge+=(--merge "$OUT/results.jsonl")
[ ${#merge[@]} -gt 0 ] || { echo "error: neither side produced results" >&2; exit 1; }
"$BENCH" "${merge[@]}" --out "$OUT" | tee "$OUT/report.txt"
