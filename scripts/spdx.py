#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Checks that every source file git knows of says its licence at its top:
"SPDX-License-Identifier: LGPL-2.1-or-later" in its first line, or its
second after a shebang or a "# shellcheck shell=" line. Not in the docs,
images, test corpora or files with no comments (LICENSE, json).

    scripts/spdx.py          list the files without it; exit 1 if any
    scripts/spdx.py --add    put it at the top of each of them

Exits 77 (skipped) outside a git checkout: the file list is git's.
"""
import os
import subprocess
import sys

TAG = "SPDX-License-Identifier: LGPL-2.1-or-later"
SLASH = (".cpp", ".hpp", ".h")
HASH = (".sh", ".cmake", ".py", ".gp", ".supp", ".dict", ".pc.in", ".h2m")
# Files that say nothing of their licence: docs, data, and the licence itself.
EXEMPT_SUFFIXES = (".md", ".png", ".json", ".jsonl")
EXEMPT = ("LICENSE", ".gitignore", "packaging/copyright")
EXEMPT_DIRS = ("tests/fuzz/corpus/",)


def comment_for(path, first_line):
    """The SPDX comment line for this file, None if it takes none."""
    name = os.path.basename(path)
    if path in EXEMPT or path.startswith(EXEMPT_DIRS) or name.endswith(EXEMPT_SUFFIXES):
        return None
    if name.endswith(SLASH):
        return f"// {TAG}\n"
    if name.endswith(".c"):
        return f"/* {TAG} */\n"
    if name.endswith(HASH) or name == "CMakeLists.txt" or first_line.startswith(b"#!"):
        return f"# {TAG}\n"
    raise SystemExit(f"spdx: no rule for {path}: add its kind to scripts/spdx.py")


def main():
    add = sys.argv[1:] == ["--add"]
    if sys.argv[1:] not in ([], ["--add"]):
        raise SystemExit(__doc__)
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    listing = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True)
    if listing.returncode != 0:
        print("spdx: skipped: not a git checkout")
        return 77
    missing, carrying = [], 0
    for path in filter(None, listing.stdout.decode().split("\0")):
        full = os.path.join(root, path)
        if not os.path.isfile(full) or os.path.islink(full):
            continue
        with open(full, "rb") as f:
            data = f.read()
        first, newline, rest = data.partition(b"\n")
        line = comment_for(path, first)
        if line is None:
            continue
        # After a shebang (or shellcheck's shell line, which must lead), second.
        after_first = line.startswith("#") and (first.startswith(b"#!") or first.startswith(b"# shellcheck shell="))
        head = rest.partition(b"\n")[0] if after_first else first
        if TAG.encode() in head:
            carrying += 1
            continue
        missing.append(path)
        if add:
            data = first + newline + line.encode() + rest if after_first else line.encode() + data
            with open(full, "r+b") as f:  # in place: the mode stays
                f.write(data)
    if missing and not add:
        print(f"spdx: {len(missing)} file(s) without '{TAG}' at the top "
              "(scripts/spdx.py --add puts it there):", *missing, sep="\n  ")
        return 1
    if add:
        print(f"spdx: added to {len(missing)} file(s)", *missing, sep="\n  ")
    else:
        print(f"spdx: all {carrying} source files carry it")
    return 0


if __name__ == "__main__":
    sys.exit(main())
