#!/usr/bin/env bash
# Runs the whole test suite: tier 1 (recipes), tier 2 (conformance on Flex, NdArray, Acc and
# wgpu on Mesa's lavapipe), tier 3 (training steps of every mode).
# wgpu needs a Vulkan driver; on a machine without a GPU that is Mesa's lavapipe, installed
# here when missing (Debian/Ubuntu, as root).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! ls /usr/share/vulkan/icd.d/*.json >/dev/null 2>&1; then
  if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    echo "installing Mesa's Vulkan drivers (lavapipe) for the wgpu tests" >&2
    apt-get update -qq && apt-get install -y -qq mesa-vulkan-drivers >/dev/null
  else
    echo "no Vulkan driver found: install mesa-vulkan-drivers (lavapipe) to run the wgpu tests" >&2
    exit 1
  fi
fi

exec cargo test --workspace --locked "$@"
