// SPDX-License-Identifier: LGPL-2.1-or-later
// rdmasrc: a live source that receives frames over RDMA (a Receiver)
// and pushes buffers that wrap the ring slots, without copying.
//
// rdmasrc.cpp is the control path (properties, start/stop, queries);
// rdmasrc_create.cpp is the per-frame path; rdmasrc_flows.cpp pushes a
// programme's other flows (its sound) on pads of their own; SlotBuffers (gstslots/, shared
// with rdmarecv --gst) recycles the buffers it pushes.
#pragma once

#include "rdmacaps.hpp"
#include "rdmaenums.hpp"
#include "rdmaprops.hpp"
#include "rdmasrc_flows.hpp"
#include "rdmastream_gst/side_data_metas.hpp"
#include "rdmastatsticker.hpp"

#include "rdmastream/receiver.hpp"
#include "rdmastream_gst/frame_copies.hpp"
#include "rdmastream_gst/frame_layout.hpp"
#include "rdmastream_gst/slot_buffers.hpp"

#include <gst/base/gstpushsrc.h>

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

G_BEGIN_DECLS
#define GST_TYPE_RDMA_SRC (gst_rdma_src_get_type())
G_DECLARE_FINAL_TYPE(GstRdmaSrc, gst_rdma_src, GST, RDMA_SRC, GstPushSrc)
GST_ELEMENT_REGISTER_DECLARE(rdmasrc);
G_END_DECLS

namespace rdmastream::gst {

inline constexpr Role kSrcDefaultRole = Role::kListen; // like udpsrc: wait for the sender
inline constexpr guint kSrcDefaultSlots = 8;
inline constexpr guint kSrcDefaultSlotSize = 4u << 20;
inline constexpr guint kSrcDefaultTimeoutMs = 10000;
inline constexpr guint kSrcDefaultMaxFrameBytes = kDefaultMaxFrameBytes;
inline constexpr guint64 kSrcDefaultMaxRingBytes = kDefaultMaxRingBytes;
inline constexpr guint kSrcDefaultHandshakeTimeoutMs = 10000;
// Slots kept out of downstream's hands: one for the sender to write the
// next frame into while we push this one, one more so it need not wait for
// our credit between two frames.
inline constexpr guint kSrcDefaultCopyThreshold = 2;

// Property values; read and written under the object lock.
struct SrcSettings : ConnectionSettings {
    SrcSettings() : ConnectionSettings(kSrcDefaultRole, kSrcDefaultTimeoutMs) {}
    guint slots = kSrcDefaultSlots;
    guint slot_size = kSrcDefaultSlotSize;
    guint max_frame_bytes = kSrcDefaultMaxFrameBytes;
    guint64 max_ring_bytes = kSrcDefaultMaxRingBytes;
    guint handshake_timeout_ms = kSrcDefaultHandshakeTimeoutMs;
    bool memory_windows = false; // RingConfig::memory_windows
    guint copy_threshold = kSrcDefaultCopyThreshold;
};

struct SrcCounters {
    guint64 frames = 0;
    guint64 bytes = 0;
    guint64 drops = 0; // gaps in the sender's frame numbers (its live policy dropped them)
    guint64 format_changes = 0;
    guint64 copies = 0; // frames copied out of their slot (copy-threshold)
    double max_frame_gap_ms = 0; // the longest time between two frames' arrivals
    // Two paths (host-b): each path's, refreshed at most every
    // PathsRefresh::kEvery and at the end; one path: empty.
    std::vector<PathReport> paths;
};

// What exists only between start() and stop() (streaming thread).
struct SrcState {
    SrcSettings settings; // copied at start
    // Where the sender is met; role=listen binds in start(), so a bad
    // address fails early. While a sender streams, the library tells
    // others "busy".
    std::optional<Door> door;
    std::optional<Door> door_b; // two paths (host-b): path B's
    // The buffers that wrap the ring; they own the receiver (via its ring),
    // so it outlives stop() while buffers are still downstream.
    std::optional<SlotBuffers> buffers;
    Receiver* receiver = nullptr; // lives as long as `buffers`
    bool ended = false; // the sender ended the stream: nobody to tell that we leave
    // A programme's flows after the first (rdmasend's sound): a pad each,
    // made at the first frame (start() names the element).
    std::optional<SrcFlowPads> flow_pads;
    GstCaps* caps = nullptr;  // what we output (the sender's caps, with the frames' HDR fields)
    // The first flow's caps as the sender announced them, for caps queries
    // before its first frame: uridecodebin (rdmasrcbin) asks as the pads
    // are added, and plugs a decodebin on a pad that answers ANY.
    GstCaps* announced_caps = nullptr;
    // Frames' captions and timecodes to metas, HDR to caps (start() names the element).
    SrcSideData side_data{nullptr, nullptr};
    // The current format, read and checked once (FrameLayout::check); every
    // frame is checked against it before it is wrapped.
    std::optional<FrameLayout> layout;
    // The sender's clock anchor, as last posted (GstRdmaSrcClock).
    std::optional<ClockAnchor> clock;
    std::uint64_t next_sequence = 0;
    SrcCounters counters;
    PathsRefresh paths_refresh; // two paths: when counters.paths is asked for again
    // Frames copied out when downstream holds too many slots (copy-threshold).
    FrameCopies copies;
    bool copying = false;       // the last frame was copied: log the changes only
    guint64 copy_spells = 0;    // times copying started (the first is logged at INFO)
    guint downstream_min = 0;   // buffers downstream asked for (the allocation query)
};

// Every C++ member of an rdmasrc. GObject allocates the instance itself,
// so they live in one struct that instance init constructs in place and
// finalize destroys: one owner, and no member is made or freed by hand.
struct SrcMembers {
    SrcSettings settings;                    // object lock
    std::unique_ptr<SrcState> state;         // streaming thread, start/stop
    SrcCounters published;                   // the "stats" property; object lock
    GstClockTime frame_duration = GST_CLOCK_TIME_NONE; // for the latency query; object lock
    std::shared_ptr<Waker> waker = std::make_shared<Waker>(); // wakes create()'s wait: unlock(), a freed slot
    std::atomic<bool> flushing{false};       // unlock(): a waiting create() returns
    StatsTicker ticker;                      // stats-interval: start() to stop()
};

} // namespace rdmastream::gst

struct _GstRdmaSrc {
    GstPushSrc parent;
    rdmastream::gst::SrcMembers m; // constructed by gst_rdma_src_init, destroyed by finalize
};

// rdmasrc_create.cpp
GstFlowReturn gst_rdma_src_create(GstPushSrc* src, GstBuffer** buf);
