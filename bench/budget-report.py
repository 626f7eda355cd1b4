#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Turns the raw counts of bench/budget.sh (DIR/raw/) into per-frame figures.

    budget-report.py DIR    writes DIR/budget.jsonl and DIR/budget.md

Per program, end and poll mode, for every system call by name (strace -f:
all threads) and for the heap calls malloc_count saw (GStreamer's helper
gst-plugin-scanner, if it ran, is left out), per frame two ways:

* window (the figures shown): in the longer run, the counts between the
  process's N1-th rxe doorbell (budget.sh --warm-up) and its last over the
  doorbells in between (one per frame sent, or per credit returned): no
  start-up, opening of the stream (from its first doorbell, a handshake
  message, to its first frames) or tear-down in it;
* difference (kept in the JSON as *_diff): (count of the long run - count
  of the short run) / (N2 - N1); start-up that differs between the runs
  (a sender retrying to connect more often in one) does not cancel there.
"""
import json
import pathlib
import sys

KINDS = {"cli": ("rdmarecv --null", "rdmasend (y4m clip, --loop)"),
         "gst": ("rdmasrc ! fakesink", "videotestsrc ! rdmasink")}
ALLOCS = ["malloc", "calloc", "realloc", "aligned", "new"]
FREES = ["free", "delete"]
DOORBELL = "write(uverbs POST_SEND (rxe doorbell))"


def fail(msg):
    sys.exit(f"budget-report: {msg}")


def syscalls(p):
    """{name: count} of a .sys file, or of a .win file (then also its "doorbells")."""
    counts = {}
    try:
        for line in open(p):
            n, name = line.rstrip("\n").split(" ", 1)
            if n == "doorbells":
                counts["doorbells"] = int(name)
            else:
                counts[name] = int(n)
    except OSError:
        fail(f"no system call counts in {p}: did that run finish?")
    return counts


def heap_window(p):
    """malloc_count's window (its MALLOC_COUNT_WINDOW_FROM-th doorbell to the last) and the doorbells in it."""
    for l in (json.loads(l) for l in open(p) if l.strip()):
        if l.get("when") == "exit" and not l.get("exe", "").endswith("gst-plugin-scanner"):
            return l.get("window", {}), l.get("window_doorbells", l.get("doorbells", 0)), l.get("window_from", 1)
    fail(f"no heap counts at exit in {p}")


def heap(p):
    total = {k: 0 for k in ALLOCS + FREES}
    try:
        lines = [json.loads(l) for l in open(p) if l.strip()]
    except OSError:
        fail(f"no heap counts in {p}: the program did not exit normally")
    for l in lines:
        if l.get("when") != "exit" or l.get("exe", "").endswith("gst-plugin-scanner"):
            continue
        for k in total:
            total[k] += l.get(k, 0)
    return total


def ordinal(n):
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def per_frame(a, b, n1, n2):
    return {k: round((b.get(k, 0) - a.get(k, 0)) / (n2 - n1), 2) for k in set(a) | set(b)}


def per_bell(counts, bells):
    return {k: round(v / (bells - 1), 2) for k, v in counts.items() if k != "doorbells"} if bells > 1 else {}


def significant(d):
    return {k: v for k, v in sorted(d.items(), key=lambda kv: -kv[1]) if abs(v) >= 0.05}


def main():
    if len(sys.argv) != 2:
        fail("usage: budget-report.py DIR")
    d = pathlib.Path(sys.argv[1])
    raw = d / "raw"
    bed = json.loads((d / "bed.json").read_text()) if (d / "bed.json").exists() else {}
    runs = {}
    for f in raw.glob("*.node1.sys"):
        kind, poll, n = f.name.split(".")[:3]
        runs.setdefault((kind, poll), set()).add(int(n))
    if not runs:
        fail(f"no results in {raw}")
    rows = []
    for kind in KINDS:
        for poll in ("event", "busy"):
            ns = sorted(runs.get((kind, poll), ()))
            if len(ns) < 2:
                continue
            n1, n2 = ns[0], ns[-1]
            for node, end in ((0, "receiver"), (1, "sender")):
                base = raw / f"{kind}.{poll}"
                failed = [(base.parent / f"{base.name}.{n}.node{node}.failed") for n in (n1, n2)]
                failed = [f"{n} frames: {f.read_text().strip()}" for n, f in zip((n1, n2), failed) if f.exists()]
                if failed:
                    rows.append({"topology": bed.get("topology"), "mtu": bed.get("mtu"), "size": bed.get("size"),
                                 "kind": kind, "program": KINDS[kind][node], "end": end, "poll": poll,
                                 "frames": [n1, n2], "failed": "; ".join(failed)})
                    continue
                sc_diff = significant(per_frame(syscalls(f"{base}.{n1}.node{node}.sys"),
                                                syscalls(f"{base}.{n2}.node{node}.sys"), n1, n2))
                hp_diff = per_frame(heap(f"{base}.{n1}.node{node}.malloc"), heap(f"{base}.{n2}.node{node}.malloc"),
                                    n1, n2)
                win = syscalls(f"{base}.{n2}.node{node}.win")
                sc = significant(per_bell(win, win.get("doorbells", 0)))
                hwin, hbells, hfrom = heap_window(f"{base}.{n2}.node{node}.malloc")
                hp = per_bell(hwin, hbells)
                rows.append({"topology": bed.get("topology"), "mtu": bed.get("mtu"), "size": bed.get("size"),
                             "kind": kind, "program": KINDS[kind][node], "end": end, "poll": poll,
                             "frames": [n1, n2], "window_from": hfrom, "window_doorbells": win.get("doorbells", 0),
                             "syscalls_per_frame": round(sum(sc.values()), 2),
                             "doorbells_per_frame": sc.get(DOORBELL, 0.0),
                             "syscalls_by_name_per_frame": sc,
                             "allocations_per_frame": round(sum(hp.get(k, 0) for k in ALLOCS), 2),
                             "frees_per_frame": round(sum(hp.get(k, 0) for k in FREES), 2),
                             "heap_per_frame": {k: hp.get(k, 0) for k in ALLOCS + FREES},
                             "syscalls_per_frame_diff": round(sum(sc_diff.values()), 2),
                             "syscalls_by_name_per_frame_diff": sc_diff,
                             "allocations_per_frame_diff": round(sum(hp_diff[k] for k in ALLOCS), 2),
                             "heap_per_frame_diff": {k: hp_diff[k] for k in ALLOCS + FREES}})
    with open(d / "budget.jsonl", "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")

    warm_up = next((r["window_from"] for r in rows if "window_from" in r), 1)
    md = [f"Bed: {bed.get('topology', '?')} topology, MTU {bed.get('mtu', '?')} (active {bed.get('active_mtu', '?')}), "
          f"{bed.get('size', '?')} frames, runs of {rows[0]['frames'][0]} and {rows[0]['frames'][1]} frames; "
          f"per frame: the longer run's counts between its {ordinal(warm_up)} rxe doorbell"
          f"{' (the stream' + chr(39) + 's opening left out)' if warm_up > 1 else ''} and its last, over the "
          "doorbells in between (the two-length difference in the last column, as a check).", "",
          "Each end ran under `strace -f` with `libmalloc_count.so` preloaded and `G_SLICE=always-malloc`.", "",
          "| program | end | poll | syscalls/frame | of which doorbells (POST_SEND write) "
          "| heap allocations/frame | frees/frame | allocations/frame by difference |",
          "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        if "failed" in r:
            md.append(f"| `{r['program']}` | {r['end']} | {r['poll']} | failed: {r['failed']} | | | | |")
            continue
        md.append(f"| `{r['program']}` | {r['end']} | {r['poll']} | {r['syscalls_per_frame']:.2f} "
                  f"| {r['doorbells_per_frame']:.2f} | {r['allocations_per_frame']:.2f} "
                  f"| {r['frees_per_frame']:.2f} | {r['allocations_per_frame_diff']:.2f} |")
    md += ["", "System calls per frame by name (at least 0.05 per frame), and the heap calls:", "",
           "| program | end | poll | system calls per frame | heap calls per frame |", "| --- | --- | --- | --- | --- |"]
    for r in rows:
        if "failed" in r:
            continue
        names = ", ".join(f"{k} {v:g}" for k, v in r["syscalls_by_name_per_frame"].items()) or "none"
        heapcalls = ", ".join(f"{k} {v:g}" for k, v in r["heap_per_frame"].items() if abs(v) >= 0.05) or "none"
        md.append(f"| `{r['program']}` | {r['end']} | {r['poll']} | {names} | {heapcalls} |")
    (d / "budget.md").write_text("\n".join(md) + "\n")


if __name__ == "__main__":
    main()
