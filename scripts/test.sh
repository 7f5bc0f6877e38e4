#!/usr/bin/env bash
# Runs the whole test suite: tier 1 (recipes), tier 2 (conformance on Flex, NdArray, Acc and
# wgpu on Mesa's lavapipe; BERT parity with a PyTorch fixture), tier 3 (training steps of every
# mode, ResNet and BERT).
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

# The text tests read the MiniLM checkpoint and the Rotten Tomatoes corpus; without them they
# skip with a message. Fetching is a no-op when the files are present and valid.
if ! scripts/fetch_text_data.sh; then
  echo "could not fetch the text data: the BERT tests will skip (see scripts/fetch_text_data.sh)" >&2
fi

exec cargo test --workspace --locked "$@"
