#!/usr/bin/env bash
# The GPU scoreboard: burnacc's `bench` (eager, fused, acc × f32, bf16; cold kernel cache, then
# warm) and the same workloads in PyTorch (scripts/torch_bench.py: eager and torch.compile,
# bf16 autocast, channels-last), in one run on one CUDA machine, merged into one table and chart.
#
#   scripts/gpu_bench.sh build     # here: CUDA build of bench, train, kernels into gpu-pack/
#   scripts/gpu_bench.sh run       # on the GPU machine, from the repository root
#
# `run` writes burnacc/results.jsonl (burnacc alone, with its own table and chart), torch.jsonl,
# then table.md, chart.png (both merged) and machine.txt into $OUT (default gpu-results/), then
# real-data/: ResNet-50 `acc` bf16 on its synthetic batch and on the mock ImageNet JPEGs through
# the loader and the device prefetcher (docs/data.md; REAL_DATA=0 skips it), then
# kernels.md: the kernel micro-benchmarks of burnacc-kernels
# (crates/kernels/benches/kernels.rs; fused kernels vs Burn, bandwidth vs copy; at most
# KERNEL_TIMEOUT more seconds, KERNELS=0 skips them). It needs no Rust toolchain: the binaries
# come from gpu-pack/ (built with CUDARC_CUDA_VERSION=13000 for a CUDA 13.0 driver); cubecl
# compiles kernels with NVRTC at run time, so CUDA_PATH must hold CUDA 13.0 headers and
# LD_LIBRARY_PATH must reach libnvrtc and libnvrtc-builtins (see ../shared/GPU.md). Every
# configuration has a time limit, so a slow one is reported as a timeout with the steps it
# finished instead of stalling the run. The defaults fit one 10-minute device call (without the
# kernel micro-benchmarks); the environment variables below resize it.
set -euo pipefail
cd "$(dirname "$0")/.."

PACK=gpu-pack
RECIPES=${RECIPES:-"configs/bench/resnet50.toml configs/bench/bert_base.toml"}
MODES=${MODES:-eager,fused,acc}
PRECISIONS=${PRECISIONS:-f32,bf16}
WARMUP=${WARMUP:-2}
STEPS=${STEPS:-5}
WINDOWS=${WINDOWS:-2}
CASE_TIMEOUT=${CASE_TIMEOUT:-45}          # seconds per burnacc configuration
TORCH_CASES=${TORCH_CASES:-eager:f32,eager:bf16,compile:bf16}
TORCH_TIMEOUT=${TORCH_TIMEOUT:-90}        # seconds per PyTorch configuration
DEVICE=${DEVICE:-cuda}                    # cpu: a dry run of the whole script without a GPU
EXTRA_SETS=${EXTRA_SETS:-}                # more --set arguments, e.g. for a CPU dry run
KERNELS=${KERNELS:-1}                     # 0: skip the kernel micro-benchmarks
KERNEL_REPS=${KERNEL_REPS:-5}             # repetitions per kernel measurement (median)
KERNEL_TIMEOUT=${KERNEL_TIMEOUT:-150}     # seconds for the whole kernel micro-benchmark
REAL_DATA=${REAL_DATA:-1}                 # 0: skip ResNet-50 on real (mock ImageNet) data
REAL_WORKERS=${REAL_WORKERS:-14}          # loader threads of the real-data case
REAL_TIMEOUT=${REAL_TIMEOUT:-150}         # seconds per real-data configuration (JPEGs written first)
COUNT_LAUNCHES=${COUNT_LAUNCHES:-0}       # 1: count kernel launches per step (costs a log message per launch)

build() {
    CUDARC_CUDA_VERSION=13000 cargo build --release -p burnacc-train -p burnacc-bench \
        --features burnacc-train/cuda,burnacc-bench/cuda --bin bench --bin train
    local target=${CARGO_TARGET_DIR:-target}
    mkdir -p "$PACK"
    for bin in bench train; do
        cp "$target/release/$bin" "$PACK/$bin"
        strip "$PACK/$bin" 2>/dev/null || true
    done
    # The kernel micro-benchmark is a bench target (harness = false) of burnacc-kernels; its
    # `cuda` feature only adds burn/cuda, so this reuses the Burn build above. Cargo names the
    # binary deps/kernels-<hash>: build it (readable diagnostics), then ask again for its path
    # in the JSON messages (a no-op build).
    local kernels
    local kbuild=(cargo bench -p burnacc-kernels --features cuda --bench kernels --no-run)
    CUDARC_CUDA_VERSION=13000 "${kbuild[@]}"
    kernels=$(CUDARC_CUDA_VERSION=13000 "${kbuild[@]}" --message-format=json \
        | sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -n 1)
    [ -n "$kernels" ] || { echo "error: no kernels bench binary was built" >&2; exit 1; }
    cp "$kernels" "$PACK/kernels"
    strip "$PACK/kernels" 2>/dev/null || true
    du -sh "$PACK"/*
    echo "next, on the GPU machine: carry $PACK, run scripts/gpu_bench.sh run"
}

# CUDA 13.0 for NVRTC: headers (CUDA_PATH) and libraries; torch's bundled CUDA libraries first.
cuda_env() {
    export CUDA_PATH=${CUDA_PATH:-/usr/local/cuda}
    local torch_libs
    torch_libs=$(python3 -c 'import os, nvidia; print(os.path.join(list(nvidia.__path__)[0], "cu13", "lib"))' 2>/dev/null || true)
    export LD_LIBRARY_PATH="${torch_libs:+$torch_libs:}$CUDA_PATH/targets/x86_64-linux/lib:$CUDA_PATH/lib64:/usr/local/nvidia/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
}

run() {
    local out=${OUT:-gpu-results}
    mkdir -p "$out"
    [ -x "$PACK/bench" ] || { echo "error: $PACK/bench is missing: run scripts/gpu_bench.sh build here first" >&2; exit 1; }
    cuda_env
    {
        date -u +"date: %Y-%m-%d %H:%M UTC"
        echo "git: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
        nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo "no nvidia-smi"
        python3 -c 'import torch; print("torch", torch.__version__, "CUDA", torch.version.cuda)' 2>/dev/null || echo "no torch"
        echo "CUDA_PATH=$CUDA_PATH"
    } | tee "$out/machine.txt"

    local sets=(--set "backend.device=$DEVICE")
    for s in $EXTRA_SETS; do sets+=(--set "$s"); done
    # Launch counting logs a message per kernel: off for the speed table unless asked for.
    local count=()
    [ "$COUNT_LAUNCHES" = 1 ] || count=(--no-count-launches)
    # burnacc first: cold kernel caches, then a warm re-run of each configuration.
    # shellcheck disable=SC2086
    "$PACK/bench" $RECIPES "${sets[@]}" --modes "$MODES" --precisions "$PRECISIONS" \
        --warmup "$WARMUP" --steps "$STEPS" --windows "$WINDOWS" --timeout "$CASE_TIMEOUT" \
        --warm-start "${count[@]}" --out "$out/burnacc" || echo "bench stopped early; keeping its results"

    local torch_args=(--cases "$TORCH_CASES" --warmup "$WARMUP" --steps "$STEPS"
        --windows "$WINDOWS" --timeout "$TORCH_TIMEOUT" --out "$out/torch.jsonl")
    python3 scripts/torch_bench.py "${torch_args[@]}" ${TORCH_ARGS:-} \
        || echo "torch bench stopped early; keeping its results"

    local merge=()
    [ -s "$out/torch.jsonl" ] && merge+=(--merge "$out/torch.jsonl")
    [ -s "$out/burnacc/results.jsonl" ] && merge+=(--merge "$out/burnacc/results.jsonl")
    "$PACK/bench" "${merge[@]}" --out "$out" | tee "$out/report.txt"

    # Real data against synthetic: does the loader keep the device busy (docs/data.md)?
    if [ "$REAL_DATA" != 0 ]; then
        # shellcheck disable=SC2086
        "$PACK/bench" configs/bench/resnet50.toml "${sets[@]}" \
            --set "data.workers=$REAL_WORKERS" --set data.prefetch=8 --set data.device_prefetch=2 \
            --modes acc --precisions bf16 --data synthetic,real \
            --warmup "$WARMUP" --steps "$STEPS" --windows "$WINDOWS" --timeout "$REAL_TIMEOUT" \
            "${count[@]}" --out "$out/real-data" || echo "real-data bench stopped early; keeping its results"
    fi

    # Kernel micro-benchmarks, last so they cannot hold up the scoreboard. Rows are printed as
    # they finish, so a timeout keeps the finished ones. On the CPU (dry run): quick shapes.
    if [ "$KERNELS" != 0 ] && [ -x "$PACK/kernels" ]; then
        local kargs=(--device "$DEVICE" --reps "$KERNEL_REPS")
        [ "$DEVICE" = cpu ] && kargs+=(--quick)
        timeout "$KERNEL_TIMEOUT" "$PACK/kernels" "${kargs[@]}" | tee "$out/kernels.md" \
            || echo "kernel bench stopped early; keeping its rows"
    fi
}

case "${1:-}" in
    build) build ;;
    run) run ;;
    *) echo "usage: scripts/gpu_bench.sh build|run" >&2; exit 2 ;;
esac
