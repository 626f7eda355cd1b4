// SPDX-License-Identifier: LGPL-2.1-or-later
// Posts an element's counters on the bus at a fixed interval (the elements'
// stats-interval property): an element message whose structure is the
// "stats" property's. The system clock's thread posts it, so the streaming
// thread pays nothing: it publishes its counters as it always did, and the
// tick reads them under the object lock once per interval.
#pragma once

#include <gst/gst.h>

#include <chrono>

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

} // namespace rdmastream::gst
