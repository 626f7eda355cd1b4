// SPDX-License-Identifier: LGPL-2.1-or-later
// rdmasink: sends each buffer as one frame over RDMA (a Sender).
//
// Split in two files: rdmasink.cpp is the control path (properties, start and
// stop, caps, the ALLOCATION query, events); rdmasink_render.cpp is the
// per-frame path, where every copy and syscall is visible.
#pragma once

#include "rdmacaps.hpp"
#include "rdmaenums.hpp"
#include "rdmaprops.hpp"
#include "rdmasink_sidedata.hpp"
#include "rdmastatsticker.hpp"

#include "rdmastream/error.hpp"
#include "rdmastream/sender.hpp"

#include <gst/base/gstbasesink.h>

#include <array>
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <string>
#include <vector>

G_BEGIN_DECLS
#define GST_TYPE_RDMA_SINK (gst_rdma_sink_get_type())
G_DECLARE_FINAL_TYPE(GstRdmaSink, gst_rdma_sink, GST, RDMA_SINK, GstBaseSink)
GST_ELEMENT_REGISTER_DECLARE(rdmasink);
G_END_DECLS

namespace rdmastream::gst {

inline constexpr Role kSinkDefaultRole = Role::kConnect; // like udpsink: dial host:port
inline constexpr SendPolicy kSinkDefaultPolicy = SendPolicy::kLossless;
inline constexpr guint kSinkDefaultTimeoutMs = 5000;
inline constexpr gboolean kSinkDefaultOfferPool = TRUE;
inline constexpr guint kStagingBuffers = 4; // registered copies of foreign buffers in flight

// Property values; read and written under the object lock.
struct SinkSettings : ConnectionSettings {
    SinkSettings() : ConnectionSettings(kSinkDefaultRole, kSinkDefaultTimeoutMs) {}
    SendPolicy policy = kSinkDefaultPolicy;
    bool offer_pool = kSinkDefaultOfferPool;
};

// Counters the "stats" property shows; the streaming thread publishes a
// copy under the object lock after each frame.
struct SinkCounters {
    guint64 frames = 0;
    guint64 bytes = 0;
    guint64 drops = 0;
    guint64 credit_waits = 0;
    guint64 copies = 0;
    double latency_mean_us = 0;
    double latency_max_us = 0;
    // Two paths (host-b): each path's, refreshed at most every
    // PathsRefresh::kEvery; one path: empty.
    std::vector<PathReport> paths;
};

// Registered memory for frames whose buffers are not from our pool: each is
// copied once into one of these before it goes out.
// A chunk is busy while its cookie is in flight.
struct Staging {
    FrameMemory memory; // none until the first foreign buffer
    std::size_t chunk_size = 0;
    std::array<std::uint64_t, kStagingBuffers> frame{}; // frame number it carries
    std::size_t next = 0;                               // round robin
};

// Cookies of frames handed to the sender and not yet done: even values are
// GstBuffer pointers we hold a reference on, odd ones staging chunks
// (index << 1 | 1). Reserved up front: the per-frame bookkeeping never
// allocates. Shared with the sender's on_done, which may outlive the
// element's state (see stop()).
using FramesInFlight = std::vector<std::uint64_t>;
// A chunk of flow N's staging (rdmasink_flows.hpp) has a cookie of its own.
inline constexpr std::uint64_t staging_cookie(std::size_t chunk, std::uint8_t flow = 0) {
    return ((std::uint64_t{flow} * kStagingBuffers + chunk) << 1) | 1;
}
// on_done: forgets `cookie` and lets its memory go; false if it was not in flight.
bool release_frame(FramesInFlight& out, std::uint64_t cookie) noexcept;

// A flow after the first, as rdmasink sends it during one stream
// (rdmasink_flows.hpp): its last format and its staging memory.
struct SinkFlowOut {
    StreamFormat format;
    bool format_dirty = true; // announce (again) before its next frame
    std::uint16_t next_format_id = 1;
    Staging staging;
};

// A request pad "sink_N" (flow N), as its events left it. Under
// SinkDriver::mutex; lives as long as the pad.
struct SinkFlowPad {
    GstPad* pad = nullptr; // null: not requested
    std::string caps;      // its current caps as sent on the wire; empty until its CAPS event
    GstSegment segment{};  // its current segment (its running time, for the clock anchor)
    bool ended = false;    // its EOS came
};

// What exists only between start() and stop(). Member order is teardown
// order, reversed: the staging memory goes before the sender (stop() lets
// go of both in that order anyway). role=listen: while the sender streams,
// the library tells any other receiver that dials "busy".
struct SinkState {
    std::unique_ptr<Sender> sender;
    GstAllocator* allocator = nullptr; // the pool's: its memory outlives the sender (FrameMemory)
    Staging staging;
    std::shared_ptr<FramesInFlight> in_flight;
    std::string caps;        // what set_caps negotiated, as sent on the wire
    bool raw_video = false;
    GstVideoInfo info{};
    bool format_dirty = true; // announce (again) before the next frame
    StreamFormat format; // the last one announced
    PlaneSet planes;
    std::uint16_t next_format_id = 1;
    // Captions, timecode, HDR, gathered per frame (start() names the element).
    SinkSideData side_data{nullptr, nullptr};
    // Flows after the first (request pads); [0] unused. Their staging
    // memory goes before the sender, as `staging` does.
    std::array<SinkFlowOut, kMaxFlows> flows;
    bool flows_announced = false; // every flow's format went out (flows_announced())
    bool clock_told = false;      // the receiver knows which absolute instant pts 0 is (tell_clock)
    bool finished = false;      // end of stream sent: the connection is over
    bool receiver_left = false; // it has every frame it wants: EOS upstream, no error
    std::chrono::milliseconds timeout{kSinkDefaultTimeoutMs};
    SinkCounters counters;
    bool two_paths = false;     // host-b: opened over two Doors
    PathsRefresh paths_refresh; // two paths: when counters.paths is asked for again
};

// The Sender is driven by one thread at a time: the streaming thread
// (render, events) or, while no frames come, the keepalive thread, which
// calls progress() so the receiver knows the sender lives (and a live
// policy's pending frame goes out as soon as a slot frees).
struct SinkDriver {
    std::mutex mutex; // held around every use of SinkState::sender
    std::condition_variable wake;
    // A request pad got caps or EOS, or went (rdmasink_flows.hpp's waits).
    std::condition_variable flows_changed;
    bool stopping = false;
    std::thread keepalive;
};

// Every C++ member of an rdmasink. GObject allocates the instance itself,
// so they live in one struct that instance init constructs in place and
// finalize destroys: one owner, and no member is made or freed by hand.
struct SinkMembers {
    SinkSettings settings;            // object lock
    std::unique_ptr<SinkState> state; // between start() and stop(); under driver.mutex
    SinkDriver driver;
    std::array<SinkFlowPad, kMaxFlows> flow_pads; // request pads; under driver.mutex ([0] unused)
    SinkCounters published;           // the "stats" property; object lock
    std::atomic<bool> flushing{false}; // unlock() -> a waiting render returns
    // unlock() wakes the sender's waits: for a receiver (open), a slot, a delivery.
    std::shared_ptr<Waker> waker = std::make_shared<Waker>();
    StatsTicker ticker;               // stats-interval: start() to stop()
};

} // namespace rdmastream::gst

struct _GstRdmaSink {
    GstBaseSink parent;
    rdmastream::gst::SinkMembers m; // constructed by gst_rdma_sink_init, destroyed by finalize
};

// rdmasink_render.cpp
GstFlowReturn gst_rdma_sink_render(GstBaseSink* sink, GstBuffer* buffer);
// A request pad's buffer (flow N, rdmasink_flows.hpp).
GstFlowReturn gst_rdma_sink_flow_chain(GstPad* pad, GstObject* parent, GstBuffer* buffer);
namespace rdmastream::gst {
// Tells the receiver the format of flow 0's frames that follow (caps, plane
// layout, the largest frame), or of flow N's (its pad's caps, opaque).
void announce(GstRdmaSink* self, SinkState& st, const PlaneSet& planes, std::size_t size);
void announce_flow(GstRdmaSink* self, SinkState& st, std::uint8_t flow, std::size_t size);
// If the receiver left with every frame it wanted (the sender's state()
// kLeft), the stream is over: an INFO message, not an error, and render
// returns EOS from now on. Says whether it left.
bool receiver_left(GstRdmaSink* self, SinkState& st);
} // namespace rdmastream::gst
