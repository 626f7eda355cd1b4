// SPDX-License-Identifier: LGPL-2.1-or-later
#include "rdmastream_cli/metrics_snapshot.hpp"

namespace rdmastream::cli {

void fill_snapshot(MetricsSnapshot& out, const StreamStats& s, const FrameCounters& c, bool connected, bool fanout,
                   std::span<const PeerReport> receivers, std::span<const PathReport> paths) {
    out.stats = s;
    out.counters = c;
    out.fanout = fanout;
    out.paths.assign(paths.begin(), paths.end()); // assigns over the old entries: their strings' capacity serves
    out.receivers.resize(receivers.size());
    for (std::size_t i = 0; i < receivers.size(); ++i) {
        PeerReport& r = out.receivers[i];
        r.peer.assign(receivers[i].peer); // assign, not copy-construct: the old capacity serves
        r.policy.assign(receivers[i].policy);
        r.stats = receivers[i].stats;
        r.left = receivers[i].left;
        r.paths.assign(receivers[i].paths.begin(), receivers[i].paths.end()); // a two-path receiver's
    }
    if (!fanout) {
        out.peers_connected = connected ? 1 : 0;
        return;
    }
    out.peers_connected = 0;
    if (out.stats.latency_samples == 0) {
        out.stats.latency_sum = {};
        out.stats.latency_buckets = {};
        for (const PeerReport& r : receivers) {
            out.stats.latency_samples += r.stats.latency_samples;
            out.stats.latency_sum += r.stats.latency_sum;
            out.stats.latency_max = std::max(out.stats.latency_max, r.stats.latency_max);
            out.stats.latency_buckets += r.stats.latency_buckets;
        }
    }
    for (const PeerReport& r : receivers) {
        if (!r.left) ++out.peers_connected;
    }
}

} // namespace rdmastream::cli
