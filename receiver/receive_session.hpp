// SPDX-License-Identifier: LGPL-2.1-or-later
// rdmarecv's work: listen or connect, take frames off the ring, give each
// to the sinks in place, release its slot (at once, or when the last sink
// that kept it hands it back), report, stop at end of stream.
#pragma once

#include "frame_sink.hpp"
#include "slot_release_queue.hpp"

#include "rdmastream_cli/connection_flags.hpp"
#include "rdmastream_cli/metrics_address.hpp"

#include "rdmastream/receiver.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace rdmastream::cli {

struct ReceiveOptions {
    ConnectionFlags connection;
    std::uint32_t slot_size = 4u << 20; // grows when the sender's frames need more
    std::uint32_t max_frame_bytes = kDefaultMaxFrameBytes; // what a sender may make us pin
    std::uint64_t max_ring_bytes = kDefaultMaxRingBytes;
    bool memory_windows = false; // RingConfig::memory_windows (--memory-windows)
    double path_skew_ms = 50;    // two paths, live: ReceiverConfig::path_skew (--path-skew)
    std::uint32_t max_flows = 8;   // ReceiverConfig::max_flows: a programme's video, audio, data
    std::uint32_t flow_slots = 16; // ReceiverConfig::flow_slots: slots of each flow after the first
    std::uint64_t frames = 0;           // 0: until end of stream
    std::string stats_json;
    bool quiet = false;
    std::optional<MetricsAddress> metrics; // --metrics: serve the counters over HTTP
};

// Slot numbers the ring may use: flow 0's slots and every other flow's
// (what SlotReleaseQueue is sized to).
inline std::uint32_t slot_capacity(const ReceiveOptions& o) noexcept {
    return o.connection.slots + (o.max_flows - 1) * o.flow_slots;
}
// Slot numbers the Receiver's frames may carry (Receiver::slot_numbers):
// with two paths, each path's connection and the one before it (a path
// that came back while frames of its last connection were still held)
// number their slots apart.
inline std::uint32_t slot_numbers(const ReceiveOptions& o, const ConnectionPlan& plan) noexcept {
    return plan.endpoint_b ? 4 * slot_capacity(o) : slot_capacity(o);
}

// `released` is where the sinks hand back slots they kept; it must outlive
// them (their buffers may be freed while they are torn down). The sinks are
// destroyed before the ring they point into.
int run_receive(const ReceiveOptions& opts, const ConnectionPlan& plan, std::vector<std::unique_ptr<FrameSink>> sinks,
                SlotReleaseQueue& released);

} // namespace rdmastream::cli
