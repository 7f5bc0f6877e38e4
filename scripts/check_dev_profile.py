#!/usr/bin/env python3
"""Checks that Cargo.toml's test-build profile names every workspace member, and nothing else.

`[profile.dev]` optimises everything (Burn and the other dependencies), `build-override` leaves
proc macros and build scripts unoptimised, and each workspace member is named under
`[profile.dev.package.<name>]` to build unoptimised with debug assertions (the comment above
`[profile.dev]` in Cargo.toml says why this is the inverse of the usual `package."*"`). A new
member missing from that list would silently be optimised, making every test build slower; a
stale name would make cargo warn. This fails on either, naming the table.

    scripts/check_dev_profile.py    (exit status 1 when Cargo.toml needs a change)
"""

import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# What a member's table sets: burnacc's crates build as cargo's default test profile would.
MEMBER_SETTINGS = {"opt-level": 0, "debug-assertions": True, "overflow-checks": True}


def main() -> int:
    manifest = tomllib.loads((ROOT / "Cargo.toml").read_text())
    members = set()
    for path in manifest["workspace"]["members"]:
        member = tomllib.loads((ROOT / path / "Cargo.toml").read_text())
        members.add(member["package"]["name"])
    tables = manifest["profile"]["dev"].get("package", {})

    problems = []
    for name in sorted(members - tables.keys()):
        problems.append(f"workspace member `{name}` has no [profile.dev.package.{name}]")
    for name in sorted(tables.keys() - members):
        problems.append(f"[profile.dev.package.{name}] names no workspace member")
    for name in sorted(members & tables.keys()):
        for key, want in MEMBER_SETTINGS.items():
            if tables[name].get(key) != want:
                problems.append(f"[profile.dev.package.{name}] {key}: expected {want!r}, "
                                f"found {tables[name].get(key)!r}")
    for problem in problems:
        print(f"Cargo.toml: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
