#!/usr/bin/env python3
"""Prints the licences of every crate linked into the agent's binary: for
each crate (name, version, the SPDX expression its manifest declares,
where it comes from), the licence files it ships (LICENSE*, LICENCE*,
COPYING*, NOTICE*, UNLICENSE). Arguments are cargo's feature flags, e.g.
`--features kerberos`, as the artefacts are built.

Usage: scripts/third-party-licenses.py [--features kerberos] > THIRD-PARTY-LICENSES
"""

import json
import os
import subprocess
import sys

NAMES = ("LICENSE", "LICENCE", "COPYING", "NOTICE", "UNLICENSE")


def metadata(features):
    out = subprocess.run(
        ["cargo", "metadata", "--format-version", "1", "--locked",
         "--filter-platform", "x86_64-unknown-linux-gnu", *features],
        check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def linked(meta):
    """The packages the binary is built from: the root and its normal
    dependencies, transitively (build scripts' dependencies are not linked)."""
    nodes = {n["id"]: n for n in meta["resolve"]["nodes"]}
    seen, stack = set(), [meta["resolve"]["root"]]
    while stack:
        pkg = stack.pop()
        if pkg in seen:
            continue
        seen.add(pkg)
        for dep in nodes[pkg]["deps"]:
            if any(k["kind"] is None for k in dep["dep_kinds"]):
                stack.append(dep["pkg"])
    return seen


def main():
    meta = metadata(sys.argv[1:])
    packages = {p["id"]: p for p in meta["packages"]}
    root = meta["resolve"]["root"]
    crates = sorted((packages[i] for i in linked(meta) if i != root),
                    key=lambda p: (p["name"], p["version"]))
    print("Third-party software in zk-election-exporter")
    print("=" * 44)
    print()
    print(f"{len(crates)} crates are linked into the binary. Each is listed with the")
    print("licence its manifest declares and the licence files it ships.")
    for p in crates:
        print()
        print("-" * 72)
        print(f"{p['name']} {p['version']}")
        print(f"Licence: {p.get('license') or 'see its licence file'}")
        if p.get("repository"):
            print(f"Source: {p['repository']}")
        folder = os.path.dirname(p["manifest_path"])
        files = sorted(f for f in os.listdir(folder)
                       if f.upper().startswith(NAMES) and os.path.isfile(os.path.join(folder, f)))
        if p.get("license_file"):
            declared = os.path.relpath(os.path.join(folder, p["license_file"]), folder)
            if declared not in files:
                files.append(declared)
        if not files:
            print("(the crate ships no licence file; its licence is the expression above)")
        for f in files:
            print()
            print(f"--- {f}")
            with open(os.path.join(folder, f), encoding="utf-8", errors="replace") as text:
                print(text.read().rstrip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
