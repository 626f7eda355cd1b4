// SPDX-License-Identifier: LGPL-2.1-or-later
// Posts an element's counters on the bus at a fixed interval (the elements'
// stats-interval property): an element message whose structure is the
// "stats" property's. The system clock's thread posts it, so the streaming
// thread pays nothing: it publishes its counters as it always did, and the
// tick reads them under the object lock once per interval.
// With two paths (host-b) the structure also has each path's counters
// (PathsRefresh, add_path_fields).
#pragma once

#include "rdmastream/stream_stats.hpp"

#include <gst/gst.h>

#include <chrono>
#include <vector>

namespace rdmastream::gst {

// The counters now, as the "stats" property gives them (transfer full).
using StatsSnapshot = GstStructure* (*)(GstElement* element);

class StatsTicker {
public:
    StatsTicker() = default;
    StatsTicker(const StatsTicker&) = delete;
    StatsTicker& operator=(const StatsTicker&) = delete;
    ~StatsTicker() { stop(); }

    // Posts snapshot(element) every `interval` from now on; 0 posts nothing.
    // The tick holds a reference to `element` until stop().
    void start(GstElement* element, std::chrono::milliseconds interval, StatsSnapshot snapshot);
    // No message is posted once it returns (a tick running now finishes first).
    void stop();

    struct Tick;

private:
    GstClock* clock_ = nullptr;
    GstClockID id_ = nullptr;
    Tick* tick_ = nullptr; // owned by the clock entry; valid while id_ is
};

// Two paths: when the streaming thread next asks the library for each
// path's counters (Receiver::paths(into), Sender::paths()) to publish with
// its others. Sender::paths() allocates its answer (Receiver::paths(into)
// only until `into` has held the names), so at most every kEvery, not per
// frame; one clock read per frame, and none with one path (the caller asks
// only with two).
class PathsRefresh {
public:
    static constexpr std::chrono::milliseconds kEvery{100};
    // True at the first call, then once kEvery has passed since the last true.
    bool due() noexcept {
        const auto now = std::chrono::steady_clock::now();
        if (now < next_) return false;
        next_ = now + kEvery;
        return true;
    }

private:
    std::chrono::steady_clock::time_point next_{};
};

// Adds each path's counters to a "stats" structure: path-a-peer,
// path-a-device (strings), path-a-up (boolean), path-a-frames-first,
// -frames-only, -frames-lost, -copies-differ, -downs, -ups (guint64), then
// path-b-...; nothing for one path (`paths` empty).
void add_path_fields(GstStructure* s, const std::vector<PathReport>& paths);

} // namespace rdmastream::gst
