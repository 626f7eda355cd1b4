// SPDX-License-Identifier: LGPL-2.1-or-later
// GstSink's per-frame path: a recycled GstBuffer that wraps the slot, its
// recycled GstVideoMeta rewritten, the push; no copy, no syscall, and once
// every slot has carried a frame no allocation (SlotBuffers). Slots
// GStreamer freed, on any thread, wait in SlotBuffers until collect_freed
// hands them to the session on the receive loop. The exception, in the
// pipeline's thread: a frame whose slot, lent to the pipeline too, would
// leave the sender fewer than the copy threshold is copied out as it leaves
// appsrc (FrameCopies, from a recycled pool) and its slot handed back.
#include "gst_sink.hpp"
#include "overlay_text.hpp"

#include "rdmastream/error.hpp"
#include "rdmastream_gst/frame_buffer.hpp"
#include "rdmastream_gst/side_data_metas.hpp"
#include "rdmastream_gst/video_meta.hpp"

#include <gst/app/gstappsrc.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <limits>

namespace rdmastream::cli {

void GstSink::collect_freed() {
    for (const std::uint16_t slot : buffers_.take_freed_st()) released_.push_from_loop(slot);
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

GstPadProbeReturn GstSink::copy_if_held(GstPad*, GstPadProbeInfo* info, gpointer self) {
    auto* sink = static_cast<GstSink*>(self);
    // Slots the pipeline holds, this frame's not among them: every frame
    // that left appsrc, less the slots that came home (only those can).
    const std::uint64_t home = sink->buffers_.returned();
    const auto held = static_cast<std::uint32_t>(sink->passed_ > home ? sink->passed_ - home : 0);
    ++sink->passed_;
    const std::uint32_t slots = sink->released_.slots();
    if (!gst::FrameCopies::needed(slots, held, sink->copy_threshold_)) return GST_PAD_PROBE_OK;
    GstBuffer* lent = GST_PAD_PROBE_INFO_BUFFER(info);
    GstBuffer* copy = nullptr;
    try {
        copy = sink->frame_copies_.copy(lent);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "rdmarecv: --gst: %s: the frame goes out in its slot\n", e.what());
        return GST_PAD_PROBE_OK;
    }
    if (!sink->told_copying_) {
        sink->told_copying_ = true;
        std::fprintf(stderr,
                     "rdmarecv: --gst: the pipeline holds %u of the ring's %u slots: frames are copied out from "
                     "frame %llu on while it does, so the sender keeps %u (--copy-threshold; counted in copies)\n",
                     held, slots, static_cast<unsigned long long>(GST_BUFFER_OFFSET(lent)),
                     slots - gst::FrameCopies::lendable(slots, sink->copy_threshold_));
    }
    GST_PAD_PROBE_INFO_DATA(info) = copy;
    gst_buffer_unref(lent); // its slot comes home: the receive loop returns the credit
    return GST_PAD_PROBE_OK;
}

bool GstSink::consume_flow(const ReceivedFrame& frame) {
    FlowSrc& f = flows_[frame.header.flow];
    GstBuffer* buffer = nullptr;
    if (gst_buffer_pool_acquire_buffer(f.pool.get(), &buffer, nullptr) != GST_FLOW_OK) {
        throw std::runtime_error(fmt::format("--gst: flow {}: no buffer from its pool", frame.header.flow));
    }
    const std::size_t size = frame.payload.size(); // checked: within the format's largest frame
    gst_buffer_fill(buffer, 0, frame.payload.data(), size); // the one copy (see gst_sink.hpp)
    gst_buffer_set_size(buffer, static_cast<gssize>(size));
    if (f.audio && GST_AUDIO_INFO_LAYOUT(&*f.audio) == GST_AUDIO_LAYOUT_NON_INTERLEAVED) {
        gst_buffer_add_audio_meta(buffer, &*f.audio, static_cast<gsize>(f.stream->samples(size)), nullptr);
    }
    if (!GST_CLOCK_TIME_IS_VALID(origin_)) origin_ = gst::clock_time(frame.header.pts);
    gst::stamp_frame_buffer(buffer, frame.header, GST_CLOCK_TIME_IS_VALID(origin_) ? origin_ : 0);
    const GstFlowReturn flow = gst_app_src_push_buffer(GST_APP_SRC(f.appsrc.get()), buffer); // takes the buffer
    if (flow != GST_FLOW_OK) {
        check_bus();
        throw std::runtime_error(fmt::format("--gst: the pipeline refused flow {}'s frame {}: {}", frame.header.flow,
                                             frame.header.sequence, gst_flow_get_name(flow)));
    }
    return true; // copied: the slot goes back now
}

bool GstSink::consume(const ReceivedFrame& frame) {
    check_bus(); // a pipeline error stops the stream at the next frame
    if (frame.header.flow != 0) return consume_flow(frame);
    // The room SlotBuffers' memory may claim: the format's largest frame,
    // which the ring grew to hold; constant per format, so the slot's
    // wrapper is made once, not per frame size.
    const std::size_t room = std::max<std::size_t>(stream_->layout.format().max_frame_size, frame.payload.size());
    GstBuffer* buffer = buffers_.wrap_st(frame.slot, frame.payload, room);
    if (!GST_CLOCK_TIME_IS_VALID(origin_)) origin_ = gst::clock_time(frame.header.pts);
    // The frame number in the offset is also what label_frame finds the text by.
    gst::stamp_frame_buffer(buffer, frame.header, GST_CLOCK_TIME_IS_VALID(origin_) ? origin_ : 0);
    gst::set_video_meta(buffer, stream_->layout); // checked at format time: cannot fail, the buffer always goes out
    if (side_data_->hdr_changed(frame.side_data)) { // a byte comparison per frame
        GstCaps* caps = side_data_->caps_for(stream_->layout.caps(), frame.side_data);
        gst_app_src_set_caps(GST_APP_SRC(appsrc_.get()), caps); // in order: before this frame
        gst_caps_unref(caps);
    }
    side_data_->attach(buffer, frame.side_data); // captions, timecode: metas (the payload stays where it is)
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
    return false; // the slot comes back through collect_freed
}

} // namespace rdmastream::cli
