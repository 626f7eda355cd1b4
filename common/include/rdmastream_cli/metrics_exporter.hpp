// SPDX-License-Identifier: LGPL-2.1-or-later
// --metrics: an HTTP endpoint (cpp-httplib, on threads of its own) that
// serves the stream's counters at /metrics while the program streams.
//
// How the numbers cross from the stream's thread to the HTTP threads, and
// why this way: the stream's thread keeps its counters as it always has
// (plain integers in StreamStats and FrameCounters, no atomics, no lock),
// and once per stats tick (a second, the tick that prints the stats line;
// one clock read per frame, which the line already made) it copies them
// into a snapshot and publishes it through a triple buffer
// (triple_buffer.hpp): one atomic exchange, never a wait, never a retry, no
// allocation once the buffers have grown. A scrape renders the newest
// snapshot on an HTTP thread. So a scrape, however slow or frequent, costs
// the stream nothing: the hot path takes no lock and shares no cache line
// with the HTTP threads between ticks.
// The alternatives: relaxed std::atomic counters would need every counter
// the transport and the programs keep turned atomic (or mirrored per frame)
// and cannot carry a fan-out's receivers, a list of addresses that grows as
// they join; a seqlock'd snapshot needs trivially copyable, fixed-size
// data, and its reader retries while the writer writes. The price of the
// snapshot: a scrape sees numbers up to a second old (Prometheus scrapes
// every 15 s or so), and while no frame flows (a stalled peer) they stand
// still.
//
// Thread rule: publish() on the stream's thread only. The HTTP threads
// serialise among themselves (a mutex no stream thread ever takes).
#pragma once

#include "rdmastream_cli/metrics_address.hpp"
#include "rdmastream_cli/metrics_snapshot.hpp"
#include "rdmastream_cli/metrics_text.hpp"
#include "rdmastream_cli/triple_buffer.hpp"

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace rdmastream::cli {

class MetricsExporter {
public:
    // Binds `at` and serves from then on (an all-zero snapshot until the
    // first publish). Throws UserError when it cannot bind (a port in use,
    // an address not on this machine, a port below 1024 without the right).
    MetricsExporter(const MetricsAddress& at, MetricsIdentity who);
    // Stops serving; returns within about a second (a scrape in progress
    // finishes, an idle connection is dropped).
    ~MetricsExporter();
    MetricsExporter(const MetricsExporter&) = delete;
    MetricsExporter& operator=(const MetricsExporter&) = delete;

    // Stream thread: these numbers from now on (see fill_snapshot).
    void publish(const StreamStats& s, const FrameCounters& c, bool connected, bool fanout = false,
                 std::span<const PeerReport> receivers = {});
    // Two paths: where each path's counters come from, asked by publish()
    // on the stream's thread (once a second), as StatsReport::set_paths.
    void set_paths(std::function<std::vector<PathReport>()> paths) { paths_ = std::move(paths); }

    // Where to scrape, e.g. http://127.0.0.1:9464/metrics.
    const std::string& url() const noexcept { return url_; }

private:
    std::string render(MetricsFormat f); // an HTTP thread

    struct Server; // cpp-httplib's, kept out of this header
    MetricsIdentity who_;
    std::function<std::vector<PathReport>()> paths_; // stream thread
    TripleBuffer<MetricsSnapshot> board_;
    std::mutex readers_; // the HTTP threads' turn at board_.latest()
    std::unique_ptr<Server> server_;
    std::thread thread_;
    std::string url_;
};

} // namespace rdmastream::cli
