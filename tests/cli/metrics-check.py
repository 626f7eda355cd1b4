# SPDX-License-Identifier: LGPL-2.1-or-later
"""Scrapes and checks the --metrics endpoints for tests/cli/metrics.sh.

  metrics-check.py scrape URL FILE [openmetrics]   GET URL into FILE
  metrics-check.py receiver SCRAPE1 SCRAPE2 OPENMETRICS_SCRAPE
  metrics-check.py sender SCRAPE1 SCRAPE2
  metrics-check.py heap WITH_METRICS.malloc WITHOUT.malloc SCRAPE1 SCRAPE2
  metrics-check.py all RECV1 RECV2 RECV_OM SEND1 SEND2 WITH.malloc WITHOUT.malloc
                                                    receiver, sender and heap
                                                    in one run

metrics.sh scrapes with curl and checks everything with one `all`: Python
takes ~5 s to start in a TCG guest.

The text is parsed with prometheus_client's parsers (Debian's
python3-prometheus-client): the Prometheus text parser, and the strict
OpenMetrics one for the scrape that asked for OpenMetrics. Exits 1 with a
line per failure.
"""
import json
import sys
import urllib.request

from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_openmetrics
from prometheus_client.parser import text_string_to_metric_families as parse_prometheus

failures = []


def fail(message):
    failures.append(message)
    print("FAIL: " + message)


def scrape(url, path, openmetrics=False):
    request = urllib.request.Request(url)
    if openmetrics:
        request.add_header("Accept", "application/openmetrics-text; version=1.0.0")
    with urllib.request.urlopen(request, timeout=10) as response:
        body = response.read().decode("utf-8")
        kind = response.headers.get("Content-Type", "")
    want = "application/openmetrics-text" if openmetrics else "text/plain; version=0.0.4"
    if not kind.startswith(want):
        fail(f"{url}: Content-Type {kind!r}, want {want}")
    with open(path, "w") as f:
        f.write(body)


def families(path, openmetrics=False):
    """{family name: family} of a scrape; the parser raises on bad text."""
    text = open(path).read()
    try:
        parsed = list((parse_openmetrics if openmetrics else parse_prometheus)(text))
    except Exception as e:  # the parsers raise ValueError and friends
        fail(f"{path}: does not parse as {'OpenMetrics' if openmetrics else 'Prometheus text'}: {e}")
        return {}
    return {f.name: f for f in parsed}


def value(fams, family, sample, labels=None):
    f = fams.get(family)
    if f is None:
        return None
    for s in f.samples:
        if s.name == sample and (labels is None or all(s.labels.get(k) == v for k, v in labels.items())):
            return s.value
    return None


def check_histogram(path, fams, family, labels=None):
    """Buckets cumulative and rising in le, +Inf equal to _count."""
    f = fams.get(family)
    if f is None or f.type != "histogram":
        fail(f"{path}: no histogram {family}")
        return
    buckets = [(float(s.labels["le"]), s.value) for s in f.samples if s.name == family + "_bucket"
               and all(s.labels.get(k) == v for k, v in (labels or {}).items())]
    if not buckets or buckets[-1][0] != float("inf"):
        fail(f"{path}: {family}{labels or ''}: no +Inf bucket last")
        return
    if [b for b, _ in buckets] != sorted(b for b, _ in buckets) or \
            any(later < earlier for (_, earlier), (_, later) in zip(buckets, buckets[1:])):
        fail(f"{path}: {family}{labels or ''}: buckets not cumulative: {buckets}")
    if value(fams, family, family + "_count", labels) != buckets[-1][1]:
        fail(f"{path}: {family}_count differs from its +Inf bucket")


# Every program's families (the Prometheus text parser names a counter's
# family without _total, as OpenMetrics does).
COUNTERS = ["rdmastream_frames", "rdmastream_bytes", "rdmastream_drops", "rdmastream_gaps",
            "rdmastream_copies", "rdmastream_zero_copy_frames", "rdmastream_conversions",
            "rdmastream_credit_waits", "rdmastream_format_changes"]


def check_common(path, fams):
    for c in COUNTERS:
        if c not in fams or fams[c].type != "counter":
            fail(f"{path}: no counter {c}_total")
    if value(fams, "rdmastream_peers_connected", "rdmastream_peers_connected") is None:
        fail(f"{path}: no gauge rdmastream_peers_connected")
    check_histogram(path, fams, "rdmastream_latency_seconds")


def rose(name, first, second, family, sample, labels=None):
    a, b = value(first, family, sample, labels), value(second, family, sample, labels)
    if a is None or b is None or not b > a:
        fail(f"{name}: {sample}{labels or ''} did not rise between the scrapes: {a} then {b}")
    return a, b


def receiver(p1, p2, pom):
    first, second, om = families(p1), families(p2), families(pom, openmetrics=True)
    for path, fams in ((p1, first), (p2, second), (pom, om)):
        check_common(path, fams)
    for family, sample in (("rdmastream_frames", "rdmastream_frames_total"),
                           ("rdmastream_bytes", "rdmastream_bytes_total"),
                           ("rdmastream_zero_copy_frames", "rdmastream_zero_copy_frames_total"),
                           ("rdmastream_latency_seconds", "rdmastream_latency_seconds_count")):
        a, b = rose("receiver", first, second, family, sample)
    if value(second, "rdmastream_peers_connected", "rdmastream_peers_connected") != 1:
        fail("receiver: rdmastream_peers_connected is not 1 while the sender streams")
    if value(second, "rdmastream_copies", "rdmastream_copies_total") != 0:
        fail("receiver: --null copied frames")
    info = value(om, "rdmastream_build", "rdmastream_build_info", {"program": "rdmarecv"})
    if info != 1:
        fail(f"{pom}: no rdmastream_build_info{{program=\"rdmarecv\"}} 1 (OpenMetrics info)")
    if not failures:
            print(f"ok receiver: frames {value(first, 'rdmastream_frames', 'rdmastream_frames_total'):.0f} then "
              f"{value(second, 'rdmastream_frames', 'rdmastream_frames_total'):.0f}; both formats parse")


def sender(p1, p2):
    first, second = families(p1), families(p2)
    for path, fams in ((p1, first), (p2, second)):
        check_common(path, fams)
    for family, sample in (("rdmastream_frames", "rdmastream_frames_total"),
                           ("rdmastream_bytes", "rdmastream_bytes_total"),
                           ("rdmastream_latency_seconds", "rdmastream_latency_seconds_count")):
        rose("sender", first, second, family, sample)
    peers = {}
    f = second.get("rdmastream_receiver_connected")
    for s in (f.samples if f else []):
        peers[s.labels["peer"]] = s.value
    if len(peers) != 3 or sorted(peers.values()) != [0, 1, 1]:
        fail(f"sender: want 3 receivers, 2 connected and the one that left at 0: {peers}")
    if value(second, "rdmastream_peers_connected", "rdmastream_peers_connected") != 2:
        fail("sender: rdmastream_peers_connected is not 2")
    for peer, connected in peers.items():
        frames = value(second, "rdmastream_receiver_frames", "rdmastream_receiver_frames_total", {"peer": peer})
        if not frames:
            fail(f"sender: receiver {peer} has no frames in rdmastream_receiver_frames_total")
        check_histogram(p2, second, "rdmastream_receiver_latency_seconds", {"peer": peer})
        if connected == 1:
            rose("sender", first, second, "rdmastream_receiver_frames", "rdmastream_receiver_frames_total",
                 {"peer": peer})
    if not failures:
            print(f"ok sender: frames rose, per-receiver series {peers} (connected or not)")


def heap(with_metrics, without, p1, p2):
    """Heap calls between the two SIGUSR2 lines of each receiver."""
    def calls(path):
        lines = [json.loads(l) for l in open(path) if '"when":"signal"' in l]
        if len(lines) < 2:
            fail(f"{path}: {len(lines)} SIGUSR2 lines, want 2")
            return None
        keys = ("malloc", "calloc", "realloc", "aligned", "new")
        return sum(lines[1][k] - lines[0][k] for k in keys)
    m, p = calls(with_metrics), calls(without)
    frames = value(families(p2), "rdmastream_frames", "rdmastream_frames_total")
    before = value(families(p1), "rdmastream_frames", "rdmastream_frames_total")
    if m is None or p is None:
        return
    if m > p + 2:
        fail(f"the receiver serving metrics made {m} heap allocations in the 3 s stretch, the one without {p}")
    else:
        print(f"ok heap: {m} allocations in the 3 s stretch with --metrics, {p} without "
              f"({frames - before:.0f} frames between the scrapes around it)")


if __name__ == "__main__":
    what, args = sys.argv[1], sys.argv[2:]
    if what == "scrape":
        scrape(args[0], args[1], len(args) > 2 and args[2] == "openmetrics")
    elif what == "all":
        r1, r2, rom, s1, s2, with_metrics, without = args
        receiver(r1, r2, rom)
        sender(s1, s2)
        heap(with_metrics, without, r1, r2)
    else:
        {"receiver": receiver, "sender": sender, "heap": heap}[what](*args)
    sys.exit(1 if failures else 0)
