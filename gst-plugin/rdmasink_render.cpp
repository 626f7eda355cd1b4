// SPDX-License-Identifier: LGPL-2.1-or-later
// rdmasink's per-frame path. A frame from our pool goes out in place (one
// buffer ref, one ibv_post_send); any other buffer is copied once into a
// registered staging chunk. Waits for a slot sleep in the transport until a
// credit comes or unlock() wakes them (the element's Waker), never in slices. No allocation: the bookkeeping vectors are
// reserved at start, the staging memory is made once per frame size.
#include "rdmaallocator.hpp"
#include "rdmasink.hpp"
#include "rdmasink_flows.hpp"

#include "rdmastream/error.hpp"
#include "rdmastream_gst/frame_buffer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#undef GST_CAT_DEFAULT // (a unity build may have another file's)
#define GST_CAT_DEFAULT gst_rdma_sink_debug

using namespace rdmastream;
using namespace rdmastream::gst;

namespace {

enum class Wait { kDone, kFlushing, kLeft };

// Runs `step()`, a transport wait that returns false when unlock() woke it
// or the receiver left, until it is done, the element is flushing or the
// receiver left (the sender's state() kLeft). A wake without flushing is a
// stale one (unlock_stop came first): wait again. The transport's own
// TimeoutError ends the wait after the timeout property.
template <typename Step>
Wait until_done(GstRdmaSink* self, const SinkState& st, Step&& step) {
    for (;;) {
        if (self->m.flushing.load()) {
            return Wait::kFlushing;
        }
        if (step()) {
            return Wait::kDone;
        }
        if (st.sender->state() == SenderState::kLeft) {
            return Wait::kLeft;
        }
    }
}

// The receiver left while render waited: EOS upstream, said once.
GstFlowReturn left(GstRdmaSink* self, SinkState& st) {
    receiver_left(self, st);
    return GST_FLOW_EOS;
}

bool is_in_flight(const SinkState& st, std::uint64_t cookie) {
    return std::find(st.in_flight->begin(), st.in_flight->end(), cookie) != st.in_flight->end();
}

// A registered chunk of flow `flow`'s staging `s` to copy a buffer of
// `size` bytes into, waiting for the frame that used it last: kDone with
// its index in `chunk`, or why there is none (flushing, the receiver left).
Wait take_staging(GstRdmaSink* self, SinkState& st, Staging& s, std::uint8_t flow, std::uint32_t max_frame_size,
                  std::size_t size, std::size_t& chunk) {
    const auto idle = [&](std::size_t i) {
        return is_in_flight(st, staging_cookie(i, flow))
                   ? until_done(self, st, [&] { return st.sender->wait_done(s.frame[i], st.timeout, flow); })
                   : Wait::kDone;
    };
    if (!s.memory || s.chunk_size < size) {
        for (std::size_t i = 0; i < kStagingBuffers; ++i) { // the old chunks must be idle
            if (const Wait w = idle(i); w != Wait::kDone) {
                return w;
            }
        }
        s.memory = FrameMemory(); // the old chunks go before the new ones are registered
        s.chunk_size = (std::max<std::size_t>(size, max_frame_size) + 4095) & ~std::size_t{4095};
        s.memory = st.sender->memory().allocate(s.chunk_size * kStagingBuffers);
        GST_INFO_OBJECT(self, "flow %u staging memory: %u chunks of %zu bytes (for buffers not from our pool)", flow,
                        kStagingBuffers, s.chunk_size);
    }
    chunk = s.next;
    s.next = (s.next + 1) % kStagingBuffers;
    return idle(chunk);
}

// Which absolute instant pts 0 is, told once, with the stream's first
// frame (of whichever pad): the pipeline's clock says how long ago this
// buffer was due (its running time in `segment` after the base time),
// so the pts presented now is its pts plus that; the anchor is read off
// this host's clocks for it (anchor_now: TAI where the kernel knows it).
// Without a clock, the buffer counts as presented now.
void tell_clock(GstRdmaSink* self, SinkState& st, GstBuffer* buffer, const GstSegment& segment) {
    if (st.clock_told || !GST_BUFFER_PTS_IS_VALID(buffer)) return;
    st.clock_told = true;
    std::int64_t pts = wire_time(GST_BUFFER_PTS(buffer));
    if (GstClock* clock = gst_element_get_clock(GST_ELEMENT(self))) {
        const GstClockTime now = gst_clock_get_time(clock);
        const GstClockTime base = gst_element_get_base_time(GST_ELEMENT(self));
        const guint64 running = gst_segment_to_running_time(&segment, GST_FORMAT_TIME, GST_BUFFER_PTS(buffer));
        if (GST_CLOCK_TIME_IS_VALID(running) && GST_CLOCK_TIME_IS_VALID(now) && now >= base) {
            pts += static_cast<std::int64_t>(now - base) - static_cast<std::int64_t>(running);
        }
        gst_object_unref(clock);
    }
    const ClockAnchor anchor = anchor_now(pts);
    GST_INFO_OBJECT(self, "pts 0 is %s %" G_GINT64_FORMAT " ns", name(anchor.clock), anchor.pts0_ns);
    st.sender->set_clock(anchor, st.timeout);
}

void publish(GstRdmaSink* self, SinkState& st) {
    const StreamStats& t = st.sender->stats();
    SinkCounters& c = st.counters;
    c.frames = t.frames;
    c.bytes = t.bytes;
    c.drops = t.drops;
    c.credit_waits = t.credit_waits;
    c.latency_mean_us = t.latency_mean_us();
    c.latency_max_us = t.latency_max_us();
    if (st.two_paths && st.paths_refresh.due()) c.paths = st.sender->paths();
    GST_OBJECT_LOCK(self);
    self->m.published = c;
    GST_OBJECT_UNLOCK(self);
}

// A frame the transport failed to send (the connection is unusable now):
// its memory back if the sender did not take it, and the element's error,
// `hint` after the cause.
GstFlowReturn send_failed(GstRdmaSink* self, SinkState& st, std::uint64_t cookie, const std::exception& e,
                          const char* hint) {
    if (cookie != 0) {
        release_frame(*st.in_flight, cookie); // if the sender did not take it
    }
    st.finished = true;
    GST_ELEMENT_ERROR(self, RESOURCE, WRITE, ("Could not send a frame over RDMA"), ("%s%s", e.what(), hint));
    return GST_FLOW_ERROR;
}

} // namespace

namespace rdmastream::gst {

// Rare: at the first frame, on new caps, and when a frame outgrows what
// was announced.
void announce(GstRdmaSink* self, SinkState& st, const PlaneSet& planes, std::size_t size) {
    std::uint32_t max_size = 0;
    if (st.raw_video) {
        max_size = static_cast<std::uint32_t>(std::max<std::size_t>(size, st.info.size));
    } else {
        max_size = std::max(opaque_frame_budget(size), st.format_dirty ? 0u : st.format.max_frame_size);
    }
    const std::uint16_t id = st.next_format_id;
    st.next_format_id = static_cast<std::uint16_t>(id == 0xffff ? 1 : id + 1); // 0 means "none"
    st.format = stream_format(st.caps, planes, max_size, id);
    GST_INFO_OBJECT(self, "announcing format %u: %s, %u planes, frames up to %u bytes", id, st.caps.c_str(),
                    planes.count, max_size);
    st.sender->set_format(st.format, st.timeout);
    st.format_dirty = false;
}

// A flow after the first: its pad's caps, opaque (no planes), frames up to
// a power of two above `size` (as an encoded flow 0's).
void announce_flow(GstRdmaSink* self, SinkState& st, std::uint8_t flow, std::size_t size) {
    SinkFlowOut& f = st.flows[flow];
    const std::uint32_t max_size = std::max(opaque_frame_budget(size), f.format_dirty ? 0u : f.format.max_frame_size);
    const std::uint16_t id = f.next_format_id;
    f.next_format_id = static_cast<std::uint16_t>(id == 0xffff ? 1 : id + 1);
    f.format = stream_format(self->m.flow_pads[flow].caps, PlaneSet{}, max_size, id);
    f.format.flow = flow;
    GST_INFO_OBJECT(self, "announcing flow %u format %u: %s, frames up to %u bytes", flow, id,
                    f.format.caps.c_str(), max_size);
    st.sender->set_format(f.format, st.timeout);
    f.format_dirty = false;
}

// on_done: the frame's memory is free again (delivered, or dropped by the
// live policy or a closing sender). Runs on whichever thread drives the
// sender, under the driver mutex.
bool release_frame(FramesInFlight& out, std::uint64_t cookie) noexcept {
    auto it = std::find(out.begin(), out.end(), cookie);
    if (it == out.end()) {
        return false; // abandoned at stop()
    }
    *it = out.back(); // order does not matter
    out.pop_back();
    if ((cookie & 1) == 0) {
        gst_buffer_unref(reinterpret_cast<GstBuffer*>(cookie));
    } // a staging chunk is free once its cookie is gone
    return true;
}

bool receiver_left(GstRdmaSink* self, SinkState& st) {
    if (st.sender->state() != SenderState::kLeft) {
        return false;
    }
    if (!st.receiver_left) { // said once
        st.finished = true;
        st.receiver_left = true;
        GST_ELEMENT_INFO(self, RESOURCE, WRITE, ("The RDMA receiver left: it has every frame it wants"),
                         ("%s; ending the stream after %" G_GUINT64_FORMAT " frames", st.sender->leaving().c_str(),
                          st.counters.frames));
    }
    return true;
}

} // namespace rdmastream::gst

GstFlowReturn gst_rdma_sink_render(GstBaseSink* sink, GstBuffer* buffer) {
    auto* self = GST_RDMA_SINK(sink);
    std::unique_lock lock(self->m.driver.mutex);
    SinkState& st = *self->m.state;
    std::uint64_t cookie = 0;
    try {
        if (st.receiver_left) {
            return GST_FLOW_EOS; // upstream ends the stream: EOS, and the pipeline's EOS message
        }
        if (st.finished) {
            GST_ELEMENT_ERROR(self, STREAM, FAILED, ("Buffer after the end of the RDMA stream"),
                              ("the connection was closed (end of stream or an earlier error)"));
            return GST_FLOW_ERROR;
        }
        if (!flows_announced(self, lock, st)) { // a programme: every flow's format first
            return self->m.flushing.load() ? GST_FLOW_FLUSHING : GST_FLOW_ERROR;
        }
        tell_clock(self, st, buffer, sink->segment);
        const std::size_t size = gst_buffer_get_size(buffer);
        PlaneSet planes;
        if (st.raw_video) {
            const GstVideoMeta* meta = gst_buffer_get_video_meta(buffer);
            planes = meta != nullptr ? planes_of(*meta) : st.planes;
        }
        if (st.format_dirty || size > st.format.max_frame_size || !(planes == st.planes)) {
            st.planes = planes;
            announce(self, st, planes, size);
            if (receiver_left(self, st)) {
                return GST_FLOW_EOS; // it left before it took the format
            }
        }

        // Where the NIC reads the frame from: its bytes, and the registered
        // memory they lie in (kept alive by the buffer, or the staging's).
        const std::byte* data = nullptr;
        const FrameMemory* from = nullptr;
        GstMemory* mem = gst_buffer_n_memory(buffer) == 1 ? gst_buffer_peek_memory(buffer, 0) : nullptr;
        if (mem != nullptr && (from = rdma_memory_lookup(mem, st.allocator, &data)) != nullptr) {
            cookie = reinterpret_cast<std::uintptr_t>(gst_buffer_ref(buffer)); // pointers are even
        } else {
            std::size_t chunk = 0;
            if (const Wait w = take_staging(self, st, st.staging, 0, st.format.max_frame_size, size, chunk);
                w != Wait::kDone) {
                return w == Wait::kFlushing ? GST_FLOW_FLUSHING : left(self, st);
            }
            auto* dst = st.staging.memory.bytes().data() + chunk * st.staging.chunk_size;
            gst_buffer_extract(buffer, 0, dst, size); // the one copy
            ++st.counters.copies;
            data = dst;
            from = &st.staging.memory;
            cookie = staging_cookie(chunk);
        }
        st.in_flight->push_back(cookie);

        const FrameMeta meta{.pts = wire_time(GST_BUFFER_PTS(buffer)),
                             .duration = wire_time(GST_BUFFER_DURATION(buffer)),
                             .flags = wire_flags(static_cast<GstBufferFlags>(GST_BUFFER_FLAGS(buffer))),
                             .side_data = st.side_data.gather(buffer, st.format.max_side_data)};
        // A send that unlock() interrupts took nothing (no frame number
        // used), so offering the frame again numbers it as the first try would.
        std::uint64_t number = 0;
        const Wait w = until_done(self, st, [&] {
            const std::optional<std::uint64_t> n = st.sender->send(*from, {data, size}, meta, cookie, st.timeout);
            number = n.value_or(0);
            return n.has_value();
        });
        if (w != Wait::kDone) {
            release_frame(*st.in_flight, cookie); // never handed over: undo
            return w == Wait::kFlushing ? GST_FLOW_FLUSHING : left(self, st);
        }
        if ((cookie & 1) != 0) {
            st.staging.frame[cookie >> 1] = number;
        }
        GST_LOG_OBJECT(self, "frame %" G_GUINT64_FORMAT ": %zu bytes, pts %" GST_TIME_FORMAT "%s", number, size,
                       GST_TIME_ARGS(GST_BUFFER_PTS(buffer)), (cookie & 1) != 0 ? " (copied)" : "");
        publish(self, st);
        return GST_FLOW_OK;
    } catch (const TimeoutError& e) {
        return send_failed(self, st, cookie, e,
                           " (raise the timeout property if the receiver is only slow, or use policy=live)");
    } catch (const std::exception& e) {
        return send_failed(self, st, cookie, e, "");
    }
}

// A request pad's buffer: flow N, copied into the flow's staging memory
// (one copy of a few kilobytes for an audio buffer), sent with its pts.
GstFlowReturn gst_rdma_sink_flow_chain(GstPad* pad, GstObject* parent, GstBuffer* buffer) {
    auto* self = GST_RDMA_SINK(parent);
    const auto flow = static_cast<std::uint8_t>(GPOINTER_TO_UINT(gst_pad_get_element_private(pad)));
    struct Unref { // the buffer is ours to drop however this ends (the copy went out)
        GstBuffer* b;
        ~Unref() { gst_buffer_unref(b); }
    } unref{buffer};
    std::unique_lock lock(self->m.driver.mutex);
    if (self->m.state == nullptr || self->m.flushing.load()) {
        return GST_FLOW_FLUSHING;
    }
    SinkState& st = *self->m.state;
    std::uint64_t cookie = 0;
    try {
        if (st.receiver_left) {
            return GST_FLOW_EOS;
        }
        if (st.finished) {
            GST_ELEMENT_ERROR(self, STREAM, FAILED, ("Buffer after the end of the RDMA stream"),
                              ("pad %s: the connection was closed (end of stream or an earlier error)",
                               GST_PAD_NAME(pad)));
            return GST_FLOW_ERROR;
        }
        if (!flows_announced(self, lock, st)) {
            return self->m.flushing.load() ? GST_FLOW_FLUSHING : GST_FLOW_ERROR;
        }
        tell_clock(self, st, buffer, self->m.flow_pads[flow].segment);
        SinkFlowOut& f = st.flows[flow];
        const std::size_t size = gst_buffer_get_size(buffer);
        if (f.format_dirty || size > f.format.max_frame_size) {
            announce_flow(self, st, flow, size);
            if (receiver_left(self, st)) {
                return GST_FLOW_EOS;
            }
        }
        std::size_t chunk = 0;
        if (const Wait w = take_staging(self, st, f.staging, flow, f.format.max_frame_size, size, chunk);
            w != Wait::kDone) {
            return w == Wait::kFlushing ? GST_FLOW_FLUSHING : left(self, st);
        }
        std::byte* dst = f.staging.memory.bytes().data() + chunk * f.staging.chunk_size;
        gst_buffer_extract(buffer, 0, dst, size); // the one copy
        cookie = staging_cookie(chunk, flow);
        st.in_flight->push_back(cookie);
        const FrameMeta meta{.pts = wire_time(GST_BUFFER_PTS(buffer)),
                             .duration = wire_time(GST_BUFFER_DURATION(buffer)),
                             .flags = wire_flags(static_cast<GstBufferFlags>(GST_BUFFER_FLAGS(buffer))),
                             .side_data = {},
                             .flow = flow};
        std::uint64_t number = 0;
        const Wait w = until_done(self, st, [&] {
            const std::optional<std::uint64_t> n =
                st.sender->send(f.staging.memory, {dst, size}, meta, cookie, st.timeout);
            number = n.value_or(0);
            return n.has_value();
        });
        if (w != Wait::kDone) {
            release_frame(*st.in_flight, cookie);
            return w == Wait::kFlushing ? GST_FLOW_FLUSHING : left(self, st);
        }
        f.staging.frame[chunk] = number;
        GST_LOG_OBJECT(self, "flow %u frame %" G_GUINT64_FORMAT ": %zu bytes, pts %" GST_TIME_FORMAT, flow, number,
                       size, GST_TIME_ARGS(GST_BUFFER_PTS(buffer)));
        publish(self, st);
        return GST_FLOW_OK;
    } catch (const TimeoutError& e) {
        return send_failed(self, st, cookie, e,
                           " (raise the timeout property if the receiver is only slow, or use policy=live)");
    } catch (const std::exception& e) {
        return send_failed(self, st, cookie, e, "");
    }
}
