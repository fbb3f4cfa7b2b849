#!/usr/bin/env bash
# Check that the declared minimum Rust version (`rust-version` in
# Cargo.toml's [workspace.package], which every crate of the workspace
# takes) is at least the highest `rust-version` among the dependencies the
# lock file resolves for this machine, as `cargo metadata` reports them: a
# dependency that needs a newer compiler than we claim makes the claim
# false. Run by .ci/run; prints the versions it compared.
#
#   scripts/check-rust-version.sh     -> exit 0, or 1 naming the dependency
set -euo pipefail
cd "$(dirname "$0")/.."

host=$(rustc -vV | sed -n 's/^host: //p')
cargo metadata --format-version 1 --locked --filter-platform "$host" | python3 -c '
import json, sys

def version(text):
    parts = [int(p) for p in text.split(".")]
    return tuple(parts + [0] * (3 - len(parts)))

metadata = json.load(sys.stdin)
members = set(metadata["workspace_members"])
ours = {}
needed = []
for package in metadata["packages"]:
    declared = package.get("rust_version")
    if package["id"] in members:
        ours[package["name"]] = declared
    elif declared:
        needed.append((version(declared), declared, package["name"] + " " + package["version"]))

missing = sorted(name for name, declared in ours.items() if not declared)
if missing:
    print("rust-version: not declared by " + ", ".join(missing)
          + " (add `rust-version.workspace = true` to its [package])", file=sys.stderr)
    sys.exit(1)
if not needed:
    print("rust-version: no dependency declares one", file=sys.stderr)
    sys.exit(0)
highest = max(needed)
failed = False
for name, declared in sorted(ours.items()):
    if version(declared) < highest[0]:
        failed = True
        print("rust-version: " + name + " declares " + declared + ", but " + highest[2]
              + " needs " + highest[1] + "; raise rust-version in Cargo.toml to at least "
              + highest[1], file=sys.stderr)
if failed:
    sys.exit(1)
print("rust-version: " + ", ".join(n + " " + d for n, d in sorted(ours.items()))
      + "; the highest a dependency needs: " + highest[1] + " (" + highest[2] + ")")
'
