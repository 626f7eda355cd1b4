#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Turns the raw outputs of bench/paths.sh (DIR/raw/) into figures.

    paths-report.py DIR             writes DIR/paths.jsonl, DIR/paths.md, DIR/paths.dat
    paths-report.py --subtitle DIR  prints the plot's subtitle (the bed it ran on)

Per size and path, each figure is the median over the rounds (the paths
ran interleaved, round after round): the throughput of the longer run as
the path itself measures it (ib_write_bw's BW average; rdmastream-bench's
first send to finish; rdmarecv's stats; for GStreamer the benchrate
tracer's first to last buffer into fakesink), and CPU (user + sys) of each
side: the longer run's total, and per frame the difference between the two
runs of a round over the difference of their frame counts, so that
start-up cancels out.
"""
import json
import pathlib
import statistics
import sys

SIZES = {"64k": 65536, "1080p": 3110400, "4k": 12441600}
LABELS = {"64k": "65,536 (64 KiB; GRAY8 256x256 for GStreamer and the CLIs)",
          "1080p": "3,110,400 (1080p I420)", "4k": "12,441,600 (4K I420)"}
PATHS = ["perftest", "bench", "cli", "cli2", "gst", "tcp"]
NAMES = {"perftest": "ib_write_bw -R (ceiling)",
         "bench": "rdmastream-bench (transport)",
         "cli": "rdmasend -> rdmarecv --null",
         "cli2": "rdmasend -> rdmarecv --null, two paths (each frame over both)",
         "gst": "videotestsrc ! rdmasink -> rdmasrc ! fakesink",
         "tcp": "videotestsrc ! tcpclientsink -> tcpserversrc ! fakesink"}


def fail(msg):
    sys.exit(f"paths-report: {msg}")


def read_time(p):
    """user+sys CPU seconds and wall seconds from /usr/bin/time -f '%U %S %e'."""
    try:
        u, s, w = open(p).read().split()[-3:]
    except (OSError, ValueError):
        fail(f"no CPU times in {p}: did that step run?")
    return float(u) + float(s), float(w)


def runs(raw):
    """{(name, path): ([n1, n2], [rounds])} from the file names NAME.PATH.N.rR.nodeK.time."""
    found = {}
    for f in raw.glob("*.node1.time"):
        name, path, n, r = f.name.split(".")[:4]
        ns, rs = found.setdefault((name, path), (set(), set()))
        ns.add(int(n))
        rs.add(int(r[1:]))
    return {k: (sorted(ns), sorted(rs)) for k, (ns, rs) in found.items()}


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def gbps_of(raw, name, path, n, r):
    base = raw / f"{name}.{path}.{n}.r{r}"
    if path == "perftest":  # the client's table: #bytes #iterations BW-peak BW-average MsgRate
        for line in open(f"{base}.node1.log"):
            f = line.split()
            if len(f) >= 4 and f[0] == str(SIZES[name]):
                return float(f[3])
        return None
    if path == "bench":
        lines = [l for l in open(f"{base}.node1.log") if l.startswith("{")]
        return json.loads(lines[-1])["gbps"] if lines else None
    if path in ("cli", "cli2"):
        return json.load(open(f"{base}.node0.json"))["gbps"]
    rate = pathlib.Path(f"{base}.node0.rate")
    return json.loads(rate.read_text().splitlines()[-1])["gbps"] if rate.exists() else None


def bed_of(d):
    p = d / "bed.json"
    return json.loads(p.read_text()) if p.exists() else {}


def host_line(d):
    """The host under the bed: its cores, accelerator and load (the machine may be shared)."""
    p = d / "host.json"
    if not p.exists():
        return ""
    h = json.loads(p.read_text())
    return (f"Host: {h.get('host_cpus', '?')} cores, {h.get('accel', '?')}, load average "
            f"{h.get('loadavg_before', '?')} before and {h.get('loadavg_after', '?')} after the "
            f"{h.get('bed_seconds', '?')} s run.")


def subtitle(bed):
    topo = {"one": "one guest", "two": "two guests"}.get(bed.get("topology"), bed.get("topology", "?"))
    if bed.get("mode") == "host":
        topo = f"host, {bed.get('device', '?')}"
    return (f"{topo}, Soft-RoCE {bed.get('device', '?')}, MTU {bed.get('mtu', '?')} "
            f"(active {bed.get('active_mtu', '?')}), {bed.get('poll', '?')} polling")


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--subtitle":
        print(subtitle(bed_of(pathlib.Path(sys.argv[2]))))
        return
    if len(sys.argv) != 2:
        fail("usage: paths-report.py DIR | --subtitle DIR")
    d = pathlib.Path(sys.argv[1])
    raw = d / "raw"
    bed = bed_of(d)
    found = runs(raw)
    if not found:
        fail(f"no results in {raw}")
    rows = []
    for name in SIZES:
        per_path = {}
        for path in PATHS:
            if (name, path) not in found:
                continue
            ns, rounds = found[(name, path)]
            n1, n2 = ns[0], ns[-1]
            gbps = [gbps_of(raw, name, path, n2, r) for r in rounds]
            row = {"topology": bed.get("topology"), "mode": bed.get("mode"), "mtu": bed.get("mtu"),
                   "active_mtu": bed.get("active_mtu"), "poll": bed.get("poll"), "size": name,
                   "bytes": SIZES[name], "path": path, "what": NAMES[path], "frames": [n1, n2],
                   "rounds": len(rounds), "gbps": median(gbps), "gbps_rounds": gbps}
            for side, node in (("recv", 0), ("send", 1)):
                total, per_frame = [], []
                for r in rounds:
                    c1, _ = read_time(raw / f"{name}.{path}.{n1}.r{r}.node{node}.time")
                    c2, _ = read_time(raw / f"{name}.{path}.{n2}.r{r}.node{node}.time")
                    total.append(c2)
                    # A long run that took no more CPU than the short one: the
                    # noise (a loaded host) is larger than the difference, and
                    # a per-frame figure from it would be negative or absurd.
                    per_frame.append((c2 - c1) / (n2 - n1) * 1e3 if n2 > n1 and c2 > c1 else None)
                row[f"{side}_cpu_s"] = round(median(total), 3)
                pf = median(per_frame)
                row[f"{side}_cpu_ms_per_frame"] = round(pf, 3) if pf is not None else None
            if path in ("cli", "cli2"):
                s = [json.load(open(raw / f"{name}.{path}.{n2}.r{r}.node1.json")) for r in rounds]
                v = [json.load(open(raw / f"{name}.{path}.{n2}.r{r}.node0.json")) for r in rounds]
                row["send_copies"] = max(x.get("copies", 0) for x in s)
                row["send_zero_copy_frames"] = max(x.get("zero_copy_frames", 0) for x in s)
                row["send_path"] = s[-1].get("path")
                row["recv_copies"] = max(x.get("copies", 0) for x in v)
                row["sender_gbps"] = median([x.get("gbps") for x in s])
            per_path[path] = row
        ceiling = per_path.get("perftest", {}).get("gbps")
        tcp_recv = per_path.get("tcp", {}).get("recv_cpu_ms_per_frame")
        for path, row in per_path.items():
            row["ratio_to_ib_write_bw"] = round(row["gbps"] / ceiling, 3) if ceiling and row["gbps"] else None
            mine = row["recv_cpu_ms_per_frame"]
            row["recv_cpu_ratio_to_tcp"] = round(mine / tcp_recv, 3) if tcp_recv and mine is not None else None
            rows.append(row)

    with open(d / "paths.jsonl", "w") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")

    def num(v, fmt):
        return "n/a" if v is None else format(v, fmt)

    md = [f"Bed: {subtitle(bed)}; kernel {bed.get('kernel', '?')}, {bed.get('cpus', '?')} vCPU(s) per guest. "
          f"{host_line(d)}", "",
          f"Medians over {rows[0]['rounds']} interleaved rounds; Gb/s of each round in brackets. CPU per frame "
          "is the long run's CPU less the short run's, over the frames between them; n/a where the long run "
          "took no more CPU than the short one (noise above the difference: more rounds, or a quieter host).", "",
          "| frame size (bytes) | path | frames (short, long) | Gb/s | vs ib_write_bw | sender CPU ms/frame "
          "| receiver CPU ms/frame | receiver CPU vs TCP | sender / receiver CPU s (long run) | copies (sender, receiver) |",
          "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for row in rows:
        copies = ""
        if row["path"] in ("cli", "cli2"):
            copies = f"{row['send_copies']} of {row['frames'][1]} (no DR1), {row['recv_copies']}"
        elif row["path"] == "gst":
            copies = "0, 0 (pool)"
        md.append(f"| {LABELS[row['size']]} | {row['what']} | {row['frames'][0]}, {row['frames'][1]} "
                  f"| {num(row['gbps'], '.3f')} ({', '.join(num(g, '.2f') for g in row['gbps_rounds'])}) "
                  f"| {num(row['ratio_to_ib_write_bw'], '.2f')} "
                  f"| {num(row['send_cpu_ms_per_frame'], '.2f')} | {num(row['recv_cpu_ms_per_frame'], '.2f')} "
                  f"| {num(row['recv_cpu_ratio_to_tcp'], '.2f')} | {row['send_cpu_s']:.2f} / {row['recv_cpu_s']:.2f} "
                  f"| {copies} |")
    (d / "paths.md").write_text("\n".join(md) + "\n")

    # gnuplot's data: one line per size, one column per path (NaN: not run).
    with open(d / "paths.dat", "w") as f:
        f.write("# bytes " + " ".join(PATHS) + "\n")
        for name in SIZES:
            vals = []
            for path in PATHS:
                v = next((r["gbps"] for r in rows if r["size"] == name and r["path"] == path), None)
                vals.append("NaN" if v is None else str(v))
            if any(v != "NaN" for v in vals):
                f.write(f"{SIZES[name]} " + " ".join(vals) + "\n")


if __name__ == "__main__":
    main()
