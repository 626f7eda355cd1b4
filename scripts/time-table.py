#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The test command's time table (scripts/test.sh prints it at the end).

usage: time-table.py STAGES [BUILD:JUNIT ...]

STAGES: one line per stage, "SECONDS<TAB>STATUS<TAB>NAME", in the order run.
BUILD:JUNIT: a ctest run's --output-junit file and the build folder it ran
in (whose `ctest --show-only=json-v1` gives each test's labels).

Prints each stage's seconds and the total, the 20 slowest tests, and the
seconds per label (a test with two labels counts under both).
"""
import collections
import json
import subprocess
import sys
import xml.etree.ElementTree as ET


def labels_of(build):
    try:
        out = subprocess.run(["ctest", "--test-dir", build, "--show-only=json-v1"],
                             capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return {}
    labels = {}
    for test in json.loads(out).get("tests", []):
        for prop in test.get("properties", []):
            if prop.get("name") == "LABELS":
                labels[test["name"]] = prop.get("value", [])
    return labels


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    stages = []
    with open(sys.argv[1]) as f:
        for line in f:
            secs, status, name = line.rstrip("\n").split("\t", 2)
            stages.append((name, int(secs), status))

    tests = []  # (seconds, name, build, status)
    per_label = collections.Counter()
    for arg in sys.argv[2:]:
        build, junit = arg.split(":", 1)
        try:
            root = ET.parse(junit).getroot()
        except (OSError, ET.ParseError):
            continue
        labels = labels_of(build)
        tag = "" if build.rstrip("/").endswith("/build") else f" [{build.rstrip('/').rsplit('/', 1)[-1]}]"
        for case in root.iter("testcase"):
            name = case.get("name", "?")
            secs = float(case.get("time", 0) or 0)
            status = case.get("status", "run")
            if case.find("failure") is not None:
                status = "FAILED"
            tests.append((secs, name + tag, status))
            for label in labels.get(name, ["(none)"]):
                per_label[label] += secs

    total = sum(s for _, s, _ in stages)
    print("==== time table " + "=" * 52)
    print(f"{'stage':<34}{'seconds':>9}  status")
    for name, secs, status in stages:
        print(f"{name:<34}{secs:>9}  {status}")
    print(f"{'total':<34}{total:>9}  ({total / 60:.1f} min)")
    if tests:
        print(f"\n20 slowest of {len(tests)} tests:")
        for secs, name, status in sorted(tests, reverse=True)[:20]:
            print(f"{secs:>9.1f}  {name}{'' if status in ('run', 'passed') else '  ' + status}")
        print("\nseconds per label (a test counts under each of its labels):")
        for label, secs in sorted(per_label.items(), key=lambda kv: -kv[1]):
            print(f"{secs:>9.1f}  {label}")
    print("=" * 68)


if __name__ == "__main__":
    main()
