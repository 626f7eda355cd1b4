#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Writes tests/timeouts.cmake from a test run's measured times.

usage: scripts/test-timeouts.py [--keep-larger OLD] BUILD [BUILD...] > tests/timeouts.cmake

Reads each BUILD's Testing/Temporary/CTestCostData.txt (ctest's own record
of every test's mean time) and gives every test that ran a timeout of three
times that, rounded up, never below 30 s (60 s for a test of the RDMA bed,
which may wait for a guest booted anew; more for boots and packages, FLOORS). gtests get theirs where they are
discovered (tests/*/CMakeLists.txt), so the table holds add_test() tests
only. Run it after a full scripts/test.sh and commit the result.
--keep-larger OLD: a test keeps OLD's timeout (the table now in
tests/timeouts.cmake) where that is larger, so that one quick run does not
cut a test's margin; tests that no longer ran are dropped.
"""
import math
import re
import sys

# Tests whose time is mostly a compile that may or may not have been done
# (fuzz builds the instrumented tree's fuzz targets): they keep their own.
KEEP = {"fuzz"}
# gtests (Suite.Case, or prefix.Suite.Case): a dotted part that starts upper-case.
GTEST = re.compile(r"(^|\.)[A-Z]")
# Floors: what a test may need beyond its usual time on a slower day.
FLOORS = [("rdmabed.serve.", 240),  # boots: a failed fixture fails every test behind it
          ("package.", 120),        # dpkg and apt in an overlay root
          ("cli.make_clips", 120),  # a fixture: ffmpeg encodes beside whatever else runs
          ("gst.guest_registry", 120),  # a fixture: a full plugin scan (ASan's is slow) under load
          ("rdma.", 60), ("rdmabed.", 60)]


def old_timeouts(path):
    """name -> seconds of a table this script wrote."""
    table = {}
    with open(path) as f:
        for line in f:
            m = re.match(r"^  (\S+) (\d+)$", line)
            if m:
                table[m.group(1)] = int(m.group(2))
    return table


def main():
    args = sys.argv[1:]
    old = {}
    if args[:1] == ["--keep-larger"] and len(args) >= 2:
        old = old_timeouts(args[1])
        args = args[2:]
    if not args:
        sys.exit(__doc__)
    seconds = {}
    for build in args:
        with open(f"{build}/Testing/Temporary/CTestCostData.txt") as f:
            for line in f:
                parts = line.split()
                if len(parts) != 3 or parts[0] == "---":
                    continue
                name, _runs, cost = parts
                seconds[name] = max(seconds.get(name, 0.0), float(cost))
    print("# SPDX-License-Identifier: LGPL-2.1-or-later")
    print("# Each add_test() test's timeout: three times what it took in a full")
    print("# scripts/test.sh on a 2-core machine without KVM, at least 30 s (60 s on")
    print("# the RDMA bed; FLOORS). Written by scripts/test-timeouts.py; rdmastream_timeouts()")
    print("# (tests/CMakeLists.txt) applies it in each folder. A test not listed")
    print("# keeps the timeout its own CMakeLists.txt gives it. rdmastream_timeouts()")
    print("# also gives each a COST of a third of it (its measured time): ctest starts")
    print("# the costliest first when it has no record of its own (a fresh clone).")
    if old:
        print("# (Where the table before was larger, its figure stayed: --keep-larger.)")
    print("set(RDMASTREAM_TEST_TIMEOUTS")
    for name in sorted(seconds):
        if GTEST.search(name):
            continue
        if name in KEEP:
            continue
        floor = next((f for prefix, f in FLOORS if name.startswith(prefix)), 30)
        print(f"  {name} {max(floor, math.ceil(3 * seconds[name]), old.get(name, 0))}")
    print(")")


if __name__ == "__main__":
    main()
