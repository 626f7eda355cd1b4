// SPDX-License-Identifier: LGPL-2.1-or-later
// What --metrics serves: the program's counters at one moment, as the
// stream's thread last published them (metrics_exporter.hpp), for the HTTP
// thread to render (metrics_text.hpp).
#pragma once

#include "rdmastream_cli/stats_report.hpp"

#include "rdmastream/stream_stats.hpp"

#include <cstdint>
#include <span>
#include <vector>

namespace rdmastream::cli {

struct MetricsSnapshot {
    StreamStats stats;      // the transport's; a fan-out's latency is its receivers' together
    FrameCounters counters; // what the program adds (copies, gaps, format changes)
    std::uint32_t peers_connected = 0;
    bool fanout = false;              // rdmasend --receivers: the per-receiver series below
    std::vector<PeerReport> receivers; // a fan-out's, those that left included
    std::vector<PathReport> paths;     // two paths: each one's, for the per-path series; one path: empty
};

// Overwrites `out` with these numbers, reusing its memory (the receivers'
// strings and the vector keep their capacity). A fan-out (`fanout`) counts
// its receivers still there as connected, and its latency is the sum of
// theirs (FanoutSender's own stats carry none); otherwise `connected` says
// whether the one peer streams. `paths`: a stream over two paths, each
// one's counters (Sender::paths(), Receiver::paths()).
void fill_snapshot(MetricsSnapshot& out, const StreamStats& s, const FrameCounters& c, bool connected,
                   bool fanout = false, std::span<const PeerReport> receivers = {},
                   std::span<const PathReport> paths = {});

} // namespace rdmastream::cli
