#!/usr/bin/env bash
# The main job on a fresh machine: fetch Fashion-MNIST (once) and train the quickstart recipe.
# Extra arguments go to `train`, e.g. scripts/quickstart.sh --set backend.mode=eager
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/fetch_fashion_mnist.sh
exec cargo run --release --locked --bin train -- configs/quickstart.toml "$@"
