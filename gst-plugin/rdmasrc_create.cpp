// rdmasrc's per-frame path: take the next frame from the ring and push a
// buffer that wraps its slot (no copy); slots downstream has freed go back
// to the sender first. Per frame: one GstBuffer and GstMemory from
// GStreamer's allocator (as shmsrc does), a GstVideoMeta for raw video; no
// other allocation, no syscall but the transport's CQ poll.
#include "rdmasrc.hpp"

#include "rdmastream/error.hpp"

#include <cstring>
#include <thread>

#define GST_CAT_DEFAULT gst_rdma_src_debug

using namespace rdmastream;
using namespace rdmastream::gst;

namespace {

constexpr std::chrono::milliseconds kSlice{20}; // how often a wait looks at the flushing flag and freed slots

// The transport reports "waited and nothing came" as a plain runtime_error
// (receiver) or a CmEventError without an event (listener); we wait in short
// slices so unlock() can interrupt, and tell these from real failures.
// (Transport wish: a distinct exception type or a non-throwing wait.)
bool is_wait_timeout(const std::exception& e) {
    if (const auto* cm = dynamic_cast<const CmEventError*>(&e)) {
        return !cm->event().has_value();
    }
    return std::strncmp(e.what(), "receiver: no frame for ", 23) == 0;
}

// Called by GStreamer when downstream frees a buffer, on any thread.
void slot_freed(gpointer data) {
    auto* t = static_cast<SrcLink::Ticket*>(data);
    SrcLink* link = t->link;
    {
        std::lock_guard lock(link->mutex);
        link->freed.push_back(t->slot); // capacity = slots: never allocates
    }
    link->unref();
}

// Returns the slots downstream freed since the last call to the sender.
void release_freed(SrcLink& link) {
    {
        std::lock_guard lock(link.mutex);
        link.freed.swap(link.draining);
    }
    for (const std::uint16_t slot : link.draining) {
        link.receiver->release(slot);
    }
    link.draining.clear();
}

// Makes the connection: waits for the sender (listen) or dials it (connect),
// in slices. False when flushing; throws on failure.
bool connect(GstRdmaSrc* self, SrcState& st) {
    const SrcSettings& s = st.settings;
    RingConfig ring;
    ring.slots = s.slots;
    ring.slot_size = s.slot_size;
    ring.poll_mode = s.poll_mode;
    ring.device = s.device;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(s.connect_timeout_ms);
    std::unique_ptr<FrameReceiver> r;
    while (!r) {
        if (self->flushing->load()) {
            return false;
        }
        try {
            if (st.listener) {
                r = FrameReceiver::accept(*st.listener, ring, kSlice * 10);
            } else {
                // One attempt each time (patience 0), so flushing is seen
                // between attempts.
                r = FrameReceiver::connect(Endpoint{s.host, static_cast<std::uint16_t>(s.port)}, ring,
                                           std::chrono::milliseconds(0));
            }
        } catch (const CmEventError& e) {
            const bool retry = st.listener ? is_wait_timeout(e)
                                           : worth_retrying(e) && std::chrono::steady_clock::now() < deadline;
            if (!retry) {
                throw;
            }
            if (!st.listener) {
                std::this_thread::sleep_for(kSlice * 10); // the sender's listener is not up yet
            }
        }
    }
    GST_INFO_OBJECT(self, "sender connected; ring of %u slots of %u bytes%s", ring.slots, ring.slot_size,
                    r->huge_pages() ? " (huge pages)" : "");
    st.link = new SrcLink(std::move(r));
    return true;
}

// The sender announced a format: output its caps from this frame on.
bool adopt_format(GstRdmaSrc* self, SrcState& st, const wire::StreamFormat& format) {
    GstCaps* caps = gst_caps_from_string(format.caps.c_str());
    if (caps == nullptr || !gst_caps_is_fixed(caps)) {
        GST_ELEMENT_ERROR(self, STREAM, FORMAT, ("The sender announced caps GStreamer cannot use"),
                          ("caps \"%s\"", format.caps.c_str()));
        if (caps != nullptr) {
            gst_caps_unref(caps);
        }
        return false;
    }
    st.raw_video = gst_structure_has_name(gst_caps_get_structure(caps, 0), "video/x-raw") &&
                   gst_video_info_from_caps(&st.info, caps);
    GstClockTime frame = GST_CLOCK_TIME_NONE;
    if (st.raw_video && st.info.fps_n > 0) {
        frame = gst_util_uint64_scale_int(GST_SECOND, st.info.fps_d, st.info.fps_n);
    }
    const bool same = st.caps != nullptr && gst_caps_is_equal(st.caps, caps);
    GST_OBJECT_LOCK(self);
    if (st.caps != nullptr) {
        gst_caps_unref(st.caps);
    }
    st.caps = gst_caps_ref(caps);
    self->frame_duration = frame;
    GST_OBJECT_UNLOCK(self);
    ++st.counters.format_changes;
    GST_INFO_OBJECT(self, "format %u: %s", format.id, format.caps.c_str());
    // Same caps announced again (e.g. larger encoded frames): nothing to renegotiate.
    const bool ok = same || gst_base_src_set_caps(GST_BASE_SRC(self), caps);
    gst_caps_unref(caps);
    if (!ok) {
        GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, ("Downstream refused the sender's caps"),
                          ("caps \"%s\"", format.caps.c_str()));
        return false;
    }
    if (!same) {
        gst_element_post_message(GST_ELEMENT(self), gst_message_new_latency(GST_OBJECT(self)));
    }
    return true;
}

} // namespace

GstFlowReturn gst_rdma_src_create(GstPushSrc* src, GstBuffer** buf) {
    auto* self = GST_RDMA_SRC(src);
    SrcState& st = *self->state;
    try {
        if (st.link == nullptr && !connect(self, st)) {
            return GST_FLOW_FLUSHING;
        }
        SrcLink& link = *st.link;
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(st.settings.timeout_ms);
        std::optional<ReceivedFrame> f;
        for (;;) {
            release_freed(link);
            if (self->flushing->load()) {
                return GST_FLOW_FLUSHING;
            }
            try {
                f = link.receiver->next(kSlice);
                break;
            } catch (const std::runtime_error& e) {
                if (!is_wait_timeout(e) || std::chrono::steady_clock::now() >= deadline) {
                    throw;
                }
            }
        }
        if (!f) {
            GST_INFO_OBJECT(self, "end of stream after %" G_GUINT64_FORMAT " frames", st.counters.frames);
            return GST_FLOW_EOS;
        }
        if (f->format == nullptr) {
            link.receiver->release(f->slot);
            GST_ELEMENT_ERROR(self, STREAM, FORMAT, ("The sender sent a frame before announcing its format"),
                              ("frame %" G_GUINT64_FORMAT ": without caps there is nothing to push",
                               f->header.sequence));
            return GST_FLOW_ERROR;
        }
        if ((f->format_changed || st.caps == nullptr) && !adopt_format(self, st, *f->format)) {
            link.receiver->release(f->slot);
            return GST_FLOW_NOT_NEGOTIATED;
        }

        // Read-only: downstream writing into the ring would race the next frame.
        auto* data = const_cast<std::byte*>(f->payload.data());
        link.refs.fetch_add(1, std::memory_order_relaxed);
        GstBuffer* buffer = gst_buffer_new_wrapped_full(GST_MEMORY_FLAG_READONLY, data, f->payload.size(), 0,
                                                        f->payload.size(), &link.tickets[f->slot], slot_freed);
        GST_BUFFER_PTS(buffer) = clock_time(f->header.pts);
        GST_BUFFER_DTS(buffer) = GST_CLOCK_TIME_NONE;
        GST_BUFFER_DURATION(buffer) = clock_time(f->header.duration);
        GST_BUFFER_FLAG_SET(buffer, buffer_flags(f->header.flags));
        if (st.raw_video && f->format->plane_count > 0) {
            gsize offset[GST_VIDEO_MAX_PLANES] = {};
            gint stride[GST_VIDEO_MAX_PLANES] = {};
            const std::size_t n = std::min<std::size_t>(f->format->plane_count, GST_VIDEO_MAX_PLANES);
            for (std::size_t i = 0; i < n; ++i) {
                offset[i] = f->format->planes[i].offset;
                stride[i] = static_cast<gint>(f->format->planes[i].stride);
            }
            gst_buffer_add_video_meta_full(buffer, GST_VIDEO_FRAME_FLAG_NONE, GST_VIDEO_INFO_FORMAT(&st.info),
                                           GST_VIDEO_INFO_WIDTH(&st.info), GST_VIDEO_INFO_HEIGHT(&st.info),
                                           static_cast<guint>(n), offset, stride);
        }

        // Frame numbers count every frame the sender was offered: a gap is
        // what its live policy dropped.
        if (f->header.sequence > st.next_sequence) {
            st.counters.drops += f->header.sequence - st.next_sequence;
        }
        st.next_sequence = f->header.sequence + 1;
        const StreamStats& t = link.receiver->stats();
        st.counters.frames = t.frames;
        st.counters.bytes = t.bytes;
        GST_OBJECT_LOCK(self);
        *self->published = st.counters;
        GST_OBJECT_UNLOCK(self);
        GST_LOG_OBJECT(self, "frame %" G_GUINT64_FORMAT " in slot %u: %zu bytes, pts %" GST_TIME_FORMAT,
                       f->header.sequence, f->slot, f->payload.size(), GST_TIME_ARGS(GST_BUFFER_PTS(buffer)));
        *buf = buffer;
        return GST_FLOW_OK;
    } catch (const std::exception& e) {
        GST_ELEMENT_ERROR(self, RESOURCE, READ, ("Lost the RDMA stream"), ("%s", e.what()));
        return GST_FLOW_ERROR;
    }
}
