// rdmasrc: a live source that receives frames over RDMA (a FrameReceiver)
// and pushes buffers that wrap the ring slots, without copying.
//
// rdmasrc.cpp is the control path (properties, start/stop, queries);
// rdmasrc_create.cpp is the per-frame path.
#pragma once

#include "rdmacaps.hpp"
#include "rdmaenums.hpp"

#include "rdmastream/frame_receiver.hpp"

#include <gst/base/gstpushsrc.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

G_BEGIN_DECLS
#define GST_TYPE_RDMA_SRC (gst_rdma_src_get_type())
G_DECLARE_FINAL_TYPE(GstRdmaSrc, gst_rdma_src, GST, RDMA_SRC, GstPushSrc)
GST_ELEMENT_REGISTER_DECLARE(rdmasrc);
G_END_DECLS

namespace rdmastream::gst {

inline constexpr const char* kSrcDefaultHost = "";
inline constexpr guint kSrcDefaultPort = kDefaultPort;
inline constexpr Role kSrcDefaultRole = Role::kListen; // like udpsrc: wait for the sender
inline constexpr guint kSrcDefaultSlots = 8;
inline constexpr guint kSrcDefaultSlotSize = 4u << 20;
inline constexpr guint kSrcDefaultConnectTimeoutMs = 10000;
inline constexpr guint kSrcDefaultTimeoutMs = 10000;

// Property values; read and written under the object lock.
struct SrcSettings {
    std::string host = kSrcDefaultHost;
    guint port = kSrcDefaultPort;
    Role role = kSrcDefaultRole;
    guint slots = kSrcDefaultSlots;
    guint slot_size = kSrcDefaultSlotSize;
    guint connect_timeout_ms = kSrcDefaultConnectTimeoutMs;
    guint timeout_ms = kSrcDefaultTimeoutMs;
    std::string device;
    PollMode poll_mode = PollMode::kEvent;
};

struct SrcCounters {
    guint64 frames = 0;
    guint64 bytes = 0;
    guint64 drops = 0; // gaps in the sender's frame numbers (its live policy dropped them)
    guint64 format_changes = 0;
};

// The receiver and the ring memory our buffers wrap. Reference counted by
// hand: the element holds one reference, every buffer downstream one more,
// so the ring outlives rdmasrc's stop() while buffers still point into it.
// A buffer's free callback may run on any thread: it queues its slot, and
// the streaming thread (the only one that drives the receiver) releases it.
struct SrcLink {
    explicit SrcLink(std::unique_ptr<FrameReceiver> r);
    void unref() noexcept; // deletes at zero

    struct Ticket { // a buffer's free-callback data, one per slot
        SrcLink* link;
        std::uint16_t slot;
    };
    std::atomic<int> refs{1};
    std::unique_ptr<FrameReceiver> receiver;
    std::vector<Ticket> tickets;
    std::mutex mutex;                   // guards `freed`
    std::vector<std::uint16_t> freed;   // slots downstream gave back; capacity = slots
    std::vector<std::uint16_t> draining; // the streaming thread's swap partner
};

// What exists only between start() and stop() (streaming thread).
struct SrcState {
    SrcSettings settings; // copied at start
    std::optional<Listener> listener; // role=listen: bound in start(), so a bad address fails early
    SrcLink* link = nullptr;
    GstCaps* caps = nullptr;  // what we output (the sender's caps)
    bool raw_video = false;
    GstVideoInfo info{};
    std::uint64_t next_sequence = 0;
    SrcCounters counters;
};

} // namespace rdmastream::gst

struct _GstRdmaSrc {
    GstPushSrc parent;
    rdmastream::gst::SrcSettings* settings;   // object lock
    rdmastream::gst::SrcState* state;         // streaming thread, start/stop
    rdmastream::gst::SrcCounters* published;  // the "stats" property; object lock
    GstClockTime frame_duration;              // for the latency query; object lock
    std::atomic<bool>* flushing;              // unlock(): a waiting create() returns
};

// rdmasrc_create.cpp
GstFlowReturn gst_rdma_src_create(GstPushSrc* src, GstBuffer** buf);
