#!/usr/bin/env bash
# Fetch Fashion-MNIST (70k 28x28 grey images, 10 classes, MIT) from Debian's
# `dataset-fashion-mnist` package and place its four IDX files in the burnacc data dir.
#
# Usage: scripts/fetch_fashion_mnist.sh [DEST]
#   DEST defaults to $BURNACC_DATA/fashion-mnist, else ~/.cache/burnacc/fashion-mnist
#   (the same default as `burnacc_datasets::fashion_mnist_dir()`).
#
# The package is downloaded with `apt-get download` into a temporary folder, unpacked with
# `dpkg -x`, and only the four .gz files are copied. Each file is then checked: IDX magic
# (2051 images, 2049 labels) and item count (60000 train, 10000 t10k). Nothing is installed
# system-wide. Re-running with the files already present and valid does nothing.
set -euo pipefail

PKG=dataset-fashion-mnist
SRC_DIR=usr/share/datasets/fashion-mnist
FILES=(
  train-images-idx3-ubyte.gz
  train-labels-idx1-ubyte.gz
  t10k-images-idx3-ubyte.gz
  t10k-labels-idx1-ubyte.gz
)

if [[ $# -ge 1 ]]; then
  DEST=$1
elif [[ -n "${BURNACC_DATA:-}" ]]; then
  DEST=$BURNACC_DATA/fashion-mnist
else
  DEST=$HOME/.cache/burnacc/fashion-mnist
fi

# Reads the first 8 bytes of a gzipped IDX file and prints "MAGIC COUNT" (big-endian u32s).
idx_header() {
  local bytes
  bytes=$(gzip -dc "$1" 2>/dev/null | head -c 8 | od -An -v -tu1 | tr -s ' \n' ' ') || true
  # shellcheck disable=SC2086
  set -- $bytes
  if [[ $# -lt 8 ]]; then
    echo "0 0"
    return
  fi
  echo "$(( ($1 << 24) | ($2 << 16) | ($3 << 8) | $4 )) $(( ($5 << 24) | ($6 << 16) | ($7 << 8) | $8 ))"
}

# Checks one file; prints an error naming the file and returns 1 when it is not as expected.
check_file() {
  local path=$1 name expected_magic expected_count header magic count
  name=$(basename "$path")
  case $name in
    *images-idx3*) expected_magic=2051 ;;
    *labels-idx1*) expected_magic=2049 ;;
  esac
  case $name in
    train-*) expected_count=60000 ;;
    t10k-*) expected_count=10000 ;;
  esac
  if [[ ! -f $path ]]; then
    echo "missing: $path" >&2
    return 1
  fi
  header=$(idx_header "$path")
  magic=${header% *}
  count=${header#* }
  if [[ $magic != "$expected_magic" ]]; then
    echo "bad IDX magic in $path: $magic (expected $expected_magic)" >&2
    return 1
  fi
  if [[ $count != "$expected_count" ]]; then
    echo "bad item count in $path: $count (expected $expected_count)" >&2
    return 1
  fi
}

check_all() {
  local ok=0 f
  for f in "${FILES[@]}"; do
    check_file "$DEST/$f" || ok=1
  done
  return $ok
}

if check_all 2>/dev/null; then
  echo "Fashion-MNIST already present and valid in $DEST"
  exit 0
fi

WORK=$(mktemp -d)
# Run as root, apt downloads as its unprivileged `_apt` user, which must own the folder.
if [[ $(id -u) == 0 ]] && id _apt >/dev/null 2>&1; then
  chown _apt "$WORK"
fi
trap 'rm -rf "$WORK"' EXIT

cd "$WORK"
# `apt-get download` needs the package lists; refresh them once if the package is unknown.
if ! apt-cache show "$PKG" >/dev/null 2>&1; then
  echo "refreshing package lists (apt-get update)"
  apt-get update -qq
fi
apt-get download "$PKG"
deb=$(ls ./*.deb)
dpkg -x "$deb" extracted

mkdir -p "$DEST"
for f in "${FILES[@]}"; do
  src=extracted/$SRC_DIR/$f
  if [[ ! -f $src ]]; then
    echo "package $deb does not contain $SRC_DIR/$f" >&2
    exit 1
  fi
  # Copy then rename, so a reader never sees a half-written file.
  cp "$src" "$DEST/.$f.tmp"
  mv "$DEST/.$f.tmp" "$DEST/$f"
done

check_all
echo "Fashion-MNIST ready in $DEST"
ls -l "$DEST"
