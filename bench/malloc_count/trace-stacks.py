#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Names and counts the stacks MALLOC_COUNT_TRACE wrote (malloc_trace.hpp).

Usage: trace-stacks.py STACKS... [--frames N]

Each frame "FILE(+0xOFFSET) [ADDR]" or "FILE(SYMBOL+0xOFFSET) [ADDR]" is
named by addr2line (function, file:line, inlined callers too) from FILE as
it is on this machine: run it where the traced programs were built. Prints
each distinct stack once, most frequent first, with how many allocations
took it and their kinds and sizes; --frames N shows N frames of each
(default 14), innermost first, without malloc_count's own and libc's
allocator frames.
"""
import collections
import re
import subprocess
import sys

FRAME = re.compile(r"^(?P<file>[^(\[]+)\((?P<sym>[^)+]*)(?:\+(?P<off>0x[0-9a-f]+))?\) ?\[(?P<addr>0x[0-9a-f]+)\]$")
HEADER = re.compile(r"^# (?P<kind>\w+) (?P<size>\d+) bytes, thread (?P<tid>\d+), doorbell (?P<bell>\d+)$")
SKIP = ("libmalloc_count.so", "libstdc++.so")  # the allocator, operator new


def read_stacks(paths):
    """(kind, size, [frame lines]) per traced allocation."""
    out = []
    for path in paths:
        head, frames = None, []
        with open(path, errors="replace") as f:
            for line in f:
                line = line.rstrip("\n")
                m = HEADER.match(line)
                if m:
                    head, frames = m, []
                elif line == "" and head is not None:
                    out.append((head["kind"], int(head["size"]), frames))
                    head = None
                elif head is not None:
                    frames.append(line)
    return out


def short(function):
    """A C++ name without its template arguments and parameters: "ns::Class::f"."""
    out, depth = [], 0
    for ch in function:
        if ch in "<(":
            depth += 1
        elif ch in ">)" and depth > 0:
            depth -= 1
        elif depth == 0:
            out.append(ch)
    return "".join(out).replace("operator", "operator ").strip() or function


class Namer:
    """addr2line per file, each offset asked once."""

    def __init__(self):
        self.cache = {}

    def demangle(self, sym):
        if not sym.startswith("_Z"):
            return sym
        try:
            return subprocess.run(["c++filt", sym], capture_output=True, text=True, check=False).stdout.strip() or sym
        except OSError:
            return sym

    def name(self, line):
        m = FRAME.match(line)
        if not m:
            return line
        path, sym, off = m["file"], m["sym"], m["off"]
        if sym:  # an exported symbol: addr2line cannot use SYMBOL+OFFSET, keep it (demangled)
            return f"{short(self.demangle(sym))}+{off} ({path.rsplit('/', 1)[-1]})"
        key = (path, off)
        if key not in self.cache:
            try:
                # -i: inlined callers too; the return address minus one is inside the call.
                res = subprocess.run(["addr2line", "-f", "-C", "-i", "-e", path, hex(int(off, 16) - 1)],
                                     capture_output=True, text=True, check=False)
                lines = res.stdout.strip().splitlines()
                pairs = [f"{short(lines[i])} {lines[i + 1].rsplit('/', 1)[-1]}" for i in range(0, len(lines) - 1, 2)]
                self.cache[key] = " <- ".join(pairs) if pairs else line
            except OSError:
                self.cache[key] = line
        return self.cache[key]


def main(argv):
    frames_shown = 14
    paths = []
    it = iter(argv)
    for a in it:
        if a == "--frames":
            frames_shown = int(next(it))
        elif a in ("-h", "--help"):
            print(__doc__)
            return 0
        else:
            paths.append(a)
    if not paths:
        print(__doc__, file=sys.stderr)
        return 2
    namer = Namer()
    groups = collections.OrderedDict()
    for kind, size, frames in read_stacks(paths):
        kept = [f for f in frames if not any(s in f for s in SKIP)][:frames_shown]
        key = tuple(namer.name(f) for f in kept)
        groups.setdefault(key, []).append((kind, size))
    for key, calls in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        kinds = collections.Counter(f"{k} {s}" for k, s in calls)
        print(f"{len(calls)} allocations: " + ", ".join(f"{n} x {ks} B" for ks, n in kinds.most_common()))
        for frame in key:
            print(f"    {frame}")
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
