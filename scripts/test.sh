#!/usr/bin/env bash
# Runs the test suite by tier (default: every tier, as CI runs it):
#   tier 1  recipes and data (the Burn-free crates: burnacc-recipe, burnacc-datasets); builds in
#           a few minutes without Burn. burnacc-fusion's tier-1 tests (its fusers on hand-built
#           op sequences) need Burn's IR, so they run with the whole suite, not with --tier 1
#   tier 2  conformance of every op on the shipped stacks (Flex, NdArray, Acc, and wgpu on Mesa's
#           lavapipe) against an f64 reference; kernels, models against PyTorch fixtures
#   tier 3  training end to end: every mode, ResNet, Swin, BERT, data parallelism, bench
#
#   scripts/test.sh [--tier 1|2|3] [extra nextest arguments]
#
# Each crate has one integration-test binary (tests/it), whose modules `tier1`, `tier2`,
# `tier3` are the tiers. cargo-nextest runs every test in a process of its own, so tests that
# read the heap counters or seed a device's generator see only their own work.
# wgpu needs a Vulkan driver; on a machine without a GPU that is Mesa's lavapipe, installed
# here when missing (Debian/Ubuntu, as root).
set -euo pipefail
cd "$(dirname "$0")/.."

tier=""
if [ "${1:-}" = "--tier" ]; then
  tier="${2:?--tier needs 1, 2 or 3}"
  shift 2
  case "$tier" in 1|2|3) ;; *) echo "--tier: expected 1, 2 or 3, got '$tier'" >&2; exit 2;; esac
fi

if ! cargo nextest --version >/dev/null 2>&1; then
  echo "installing cargo-nextest (runs each test in its own process)" >&2
  cargo install cargo-nextest --locked
fi

if [ "$tier" = 1 ]; then
  exec cargo nextest run --locked --no-fail-fast -p burnacc-recipe -p burnacc-datasets "$@"
fi

if ! ls /usr/share/vulkan/icd.d/*.json >/dev/null 2>&1; then
  if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    echo "installing Mesa's Vulkan drivers (lavapipe) for the wgpu tests" >&2
    apt-get update -qq && apt-get install -y -qq mesa-vulkan-drivers >/dev/null
  else
    echo "no Vulkan driver found: install mesa-vulkan-drivers (lavapipe) to run the wgpu tests" >&2
    exit 1
  fi
fi

# The text tests read the MiniLM checkpoint and the Rotten Tomatoes corpus; without them they
# skip with a message. Fetching is a no-op when the files are present and valid.
if ! scripts/fetch_text_data.sh; then
  echo "could not fetch the text data: the BERT tests will skip (see scripts/fetch_text_data.sh)" >&2
fi

if [ -n "$tier" ]; then
  exec cargo nextest run --workspace --locked --no-fail-fast -E "test(/^tier${tier}::/)" "$@"
fi
exec cargo nextest run --workspace --locked --no-fail-fast "$@"
