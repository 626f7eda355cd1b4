// GstSink's per-frame path: one GstBuffer wrapping the slot (GStreamer
// allocates the buffer and its memory header, as shmsrc's do), one
// GstVideoMeta, the push; no copy, no syscall. The free callback runs on
// whichever thread drops the last reference and only queues the slot.
#include "gst_sink.hpp"
#include "overlay_text.hpp"

#include "rdmastream/error.hpp"

#include <gst/app/gstappsrc.h>

#include <fmt/format.h>

#include <algorithm>
#include <limits>

namespace rdmastream::cli {
namespace {
constexpr std::int64_t kNone = std::numeric_limits<std::int64_t>::min(); // no timestamp on the wire
} // namespace

void GstSink::buffer_freed(gpointer ticket) {
    const auto* t = static_cast<const Ticket*>(ticket);
    t->released->push(t->slot);
}

GstPadProbeReturn GstSink::label_frame(GstPad*, GstPadProbeInfo* info, gpointer self) {
    auto* sink = static_cast<GstSink*>(self);
    const guint64 sequence = GST_BUFFER_OFFSET(GST_PAD_PROBE_INFO_BUFFER(info));
    for (const SlotText& t : sink->texts_) { // a few slots: a linear look is cheapest
        if (t.sequence.load(std::memory_order_acquire) == sequence) {
            g_object_set(sink->stats_.get(), "text", t.text.data(), nullptr);
            break;
        }
    }
    return GST_PAD_PROBE_OK;
}

bool GstSink::consume(const ReceivedFrame& frame) {
    check_bus(); // a pipeline error stops the stream at the next frame
    if (frame.payload.size() < extent_) {
        throw ProtocolError(fmt::format("frame {}: its {}-byte payload is smaller than its format's planes ({} bytes)",
                                        frame.header.sequence, frame.payload.size(), extent_));
    }
    const std::size_t size = frame.payload.size();
    // Read-only: an element writing into the slot would race the sender's
    // next frame there; GStreamer copies when an element wants to write.
    GstBuffer* buffer = gst_buffer_new_wrapped_full(GST_MEMORY_FLAG_READONLY, const_cast<std::byte*>(frame.payload.data()),
                                                    size, 0, size, &tickets_[frame.slot], &GstSink::buffer_freed);
    if (frame.header.pts != kNone) {
        if (!have_first_pts_) {
            first_pts_ = frame.header.pts;
            have_first_pts_ = true;
        }
        GST_BUFFER_PTS(buffer) = static_cast<GstClockTime>(std::max<std::int64_t>(frame.header.pts - first_pts_, 0));
    }
    if (frame.header.duration != kNone && frame.header.duration > 0) {
        GST_BUFFER_DURATION(buffer) = static_cast<GstClockTime>(frame.header.duration);
    }
    GST_BUFFER_OFFSET(buffer) = frame.header.sequence; // the frame number, as video sources set it
    gsize offset[GST_VIDEO_MAX_PLANES] = {};
    gint stride[GST_VIDEO_MAX_PLANES] = {};
    const guint planes = std::min<guint>(GST_VIDEO_INFO_N_PLANES(&info_), format_.plane_count);
    for (guint i = 0; i < planes; ++i) {
        offset[i] = format_.planes[i].offset;
        stride[i] = static_cast<gint>(format_.planes[i].stride);
    }
    gst_buffer_add_video_meta_full(buffer, GST_VIDEO_FRAME_FLAG_NONE, GST_VIDEO_INFO_FORMAT(&info_),
                                   GST_VIDEO_INFO_WIDTH(&info_), GST_VIDEO_INFO_HEIGHT(&info_), planes, offset, stride);
    if (stats_) {
        SlotText& t = texts_[frame.slot];
        overlay_text(frame, t.text);
        t.sequence.store(frame.header.sequence, std::memory_order_release);
    }
    const GstFlowReturn flow = gst_app_src_push_buffer(GST_APP_SRC(appsrc_.get()), buffer); // takes the buffer
    if (flow != GST_FLOW_OK) {
        check_bus();
        throw std::runtime_error(fmt::format("--gst: the pipeline refused frame {}: {}", frame.header.sequence,
                                             gst_flow_get_name(flow)));
    }
    return false; // the slot comes back through buffer_freed
}

} // namespace rdmastream::cli
