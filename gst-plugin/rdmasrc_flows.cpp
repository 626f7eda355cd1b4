// SPDX-License-Identifier: LGPL-2.1-or-later
#include "rdmasrc_flows.hpp"

#include "rdmastream_gst/frame_buffer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <string>

#undef GST_CAT_DEFAULT // (a unity build may have another file's)
#define GST_CAT_DEFAULT category_

namespace rdmastream::gst {

struct SrcFlowPads::FlowPad {
    std::uint8_t flow = 0;
    GstPad* pad = nullptr;          // the element's (add_pad took the floating reference)
    GstBufferPool* pool = nullptr;  // the current format's buffers
    std::uint16_t format_id = 0;    // the format its caps are
    std::optional<GstAudioInfo> audio; // raw audio: its sample layout
    bool pushed = false;            // false: its format is not one rdmasrc pushes
};

SrcFlowPads::SrcFlowPads(GstElement* element, GstDebugCategory* category)
    : element_(element), category_(category) {}

SrcFlowPads::~SrcFlowPads() {
    if (allocation_probe_ != 0) gst_pad_remove_probe(main_, allocation_probe_);
    for (auto& p : pads_) {
        if (!p) continue;
        gst_pad_set_active(p->pad, FALSE);
        gst_element_remove_pad(element_, p->pad);
        if (p->pool != nullptr) {
            gst_buffer_pool_set_active(p->pool, FALSE); // buffers still downstream are freed as they come home
            gst_object_unref(p->pool);
        }
    }
}

void SrcFlowPads::refuse(std::uint8_t flow, const std::string& why) {
    if (refused_ & (1u << flow)) return;
    refused_ = static_cast<std::uint16_t>(refused_ | 1u << flow);
    GST_ELEMENT_WARNING(element_, STREAM, FORMAT, ("The sender's flow %u is not pushed", flow), ("%s", why.c_str()));
}

void SrcFlowPads::add(Receiver& receiver, GstPad* main) {
    added_ = true;
    // One group with the always pad's stream, so that playbin and decodebin
    // treat the flows as one programme.
    if (GstEvent* start = gst_pad_get_sticky_event(main, GST_EVENT_STREAM_START, 0)) {
        if (!gst_event_parse_group_id(start, &group_id_)) group_id_ = gst_util_group_id_next();
        gst_event_unref(start);
    } else {
        group_id_ = gst_util_group_id_next();
    }
    GstPadTemplate* templ = gst_element_class_get_pad_template(GST_ELEMENT_GET_CLASS(element_), "src_%u");
    for (std::uint8_t flow = 1; flow < kMaxFlows; ++flow) {
        const StreamFormat* format = receiver.format(flow);
        if (format == nullptr) continue;
        auto p = std::make_unique<FlowPad>();
        p->flow = flow;
        p->pad = gst_pad_new_from_template(templ, fmt::format("src_{}", flow).c_str());
        gst_pad_use_fixed_caps(p->pad);
        gst_pad_set_active(p->pad, TRUE);
        gchar* id = gst_pad_create_stream_id_printf(p->pad, element_, "flow%u", flow);
        GstEvent* start = gst_event_new_stream_start(id);
        g_free(id);
        gst_event_set_group_id(start, group_id_);
        gst_pad_push_event(p->pad, start); // sticky: kept for a link made later
        adopt(*p, *format);
        GstSegment segment; // the sender's timestamps as they are, as on "src"
        gst_segment_init(&segment, GST_FORMAT_TIME);
        gst_pad_push_event(p->pad, gst_event_new_segment(&segment));
        // Added with its caps known, so that uridecodebin sees raw audio
        // at once; gst-launch's and the application's links happen here.
        gst_element_add_pad(element_, p->pad);
        GST_INFO_OBJECT(element_, "flow %u on pad src_%u: %s", flow, flow, format->caps.c_str());
        pads_[flow] = std::move(p);
    }
    if (std::any_of(pads_.begin(), pads_.end(), [](const auto& p) { return p != nullptr; })) {
        // A programme: no ALLOCATION query on "src" from here on (basesrc
        // asks one after each caps and reconfigure). It is serialized, and
        // the streaming thread that asks it pushes every flow: a queue
        // downstream holds it until the data before it went on, which may
        // wait for another flow's buffers this thread would push next
        // (playbin's stream synchronizer: a deadlock, seen with one CPU).
        // Unanswered, it costs what a pipeline that answers none costs:
        // copy-threshold alone keeps slots for the sender.
        main_ = main;
        allocation_probe_ = gst_pad_add_probe(
            main, GST_PAD_PROBE_TYPE_QUERY_DOWNSTREAM,
            [](GstPad*, GstPadProbeInfo* info, gpointer) {
                GstQuery* q = GST_PAD_PROBE_INFO_QUERY(info);
                return GST_QUERY_TYPE(q) == GST_QUERY_ALLOCATION ? GST_PAD_PROBE_DROP : GST_PAD_PROBE_OK;
            },
            nullptr, nullptr);
    }
    gst_element_no_more_pads(element_);
}

// Caps for the flow's new format, and a pool of its frame size. A format
// rdmasrc cannot push (caps GStreamer cannot read as one fixed format, raw
// video on a second flow) is warned about once; its frames go back.
GstFlowReturn SrcFlowPads::adopt(FlowPad& p, const StreamFormat& format) {
    p.format_id = format.id;
    p.pushed = false;
    p.audio.reset();
    GstCaps* caps = gst_caps_from_string(format.caps.c_str());
    if (caps == nullptr || !gst_caps_is_fixed(caps)) {
        if (caps != nullptr) gst_caps_unref(caps);
        refuse(p.flow, fmt::format("GStreamer cannot read its caps \"{}\" as one fixed format", format.caps));
        return GST_FLOW_OK;
    }
    const GstStructure* s = gst_caps_get_structure(caps, 0);
    if (gst_structure_has_name(s, "audio/x-raw")) {
        GstAudioInfo info;
        if (!gst_audio_info_from_caps(&info, caps)) {
            gst_caps_unref(caps);
            refuse(p.flow, fmt::format("its caps \"{}\" are no raw audio GStreamer knows", format.caps));
            return GST_FLOW_OK;
        }
        p.audio = info;
    } else if (gst_structure_has_name(s, "video/x-raw")) {
        gst_caps_unref(caps);
        refuse(p.flow, fmt::format("raw video on a flow after the first ({}) goes out of no pad yet", format.caps));
        return GST_FLOW_OK;
    }
    gst_pad_push_event(p.pad, gst_event_new_caps(caps)); // sticky, as the stream-start
    if (p.pool != nullptr) {
        gst_buffer_pool_set_active(p.pool, FALSE);
        gst_object_unref(p.pool);
    }
    p.pool = gst_buffer_pool_new();
    GstStructure* config = gst_buffer_pool_get_config(p.pool);
    gst_buffer_pool_config_set_params(config, caps, format.max_frame_size, 0, 0);
    gst_caps_unref(caps);
    if (!gst_buffer_pool_set_config(p.pool, config) || !gst_buffer_pool_set_active(p.pool, TRUE)) {
        GST_ELEMENT_ERROR(element_, RESOURCE, NO_SPACE_LEFT, ("No buffers for the sender's flow %u", p.flow),
                          ("a pool of %u-byte buffers would not start", format.max_frame_size));
        return GST_FLOW_ERROR;
    }
    p.pushed = true;
    return GST_FLOW_OK;
}

GstFlowReturn SrcFlowPads::push(const ReceivedFrame& frame, Receiver& receiver) {
    const std::uint8_t flow = frame.header.flow;
    struct GiveBack { // the slot goes back however this ends
        Receiver& r;
        std::uint16_t slot;
        bool done = false;
        void now() { if (!done) r.release(slot); done = true; }
        ~GiveBack() { now(); }
    } give_back{receiver, frame.slot};
    FlowPad* p = flow < pads_.size() ? pads_[flow].get() : nullptr;
    if (p == nullptr || frame.format == nullptr) {
        refuse(flow, "its first format came after the stream's first frame: the pads were made then");
        return GST_FLOW_OK;
    }
    if (frame.format->id != p->format_id) {
        if (const GstFlowReturn r = adopt(*p, *frame.format); r != GST_FLOW_OK) return r;
    }
    if (!p->pushed) return GST_FLOW_OK;
    const std::size_t size = frame.payload.size();
    std::size_t samples = 0;
    if (p->audio) {
        const auto bpf = static_cast<std::size_t>(GST_AUDIO_INFO_BPF(&*p->audio));
        if (size % bpf != 0) {
            GST_ELEMENT_ERROR(element_, STREAM, FORMAT, ("The sender sent an audio frame of part of a sample"),
                              ("flow %u frame %" G_GUINT64_FORMAT ": %zu bytes is no whole number of %zu-byte samples "
                               "of every channel",
                               flow, frame.header.sequence, size, bpf));
            return GST_FLOW_ERROR;
        }
        samples = size / bpf;
    }
    GstBuffer* buffer = nullptr;
    if (const GstFlowReturn r = gst_buffer_pool_acquire_buffer(p->pool, &buffer, nullptr); r != GST_FLOW_OK) {
        return r; // flushing
    }
    gst_buffer_fill(buffer, 0, frame.payload.data(), size); // the one copy (see the header)
    gst_buffer_set_size(buffer, static_cast<gssize>(size));
    give_back.now();
    if (p->audio && GST_AUDIO_INFO_LAYOUT(&*p->audio) == GST_AUDIO_LAYOUT_NON_INTERLEAVED) {
        gst_buffer_add_audio_meta(buffer, &*p->audio, samples, nullptr); // planes back to back
    }
    stamp_frame_buffer(buffer, frame.header);
    GST_LOG_OBJECT(element_, "flow %u frame %" G_GUINT64_FORMAT ": %zu bytes, pts %" GST_TIME_FORMAT, flow,
                   frame.header.sequence, size, GST_TIME_ARGS(GST_BUFFER_PTS(buffer)));
    const GstFlowReturn r = gst_pad_push(p->pad, buffer);
    // Nobody linked to this flow, or downstream wants no more of it: the
    // other flows go on.
    if (r == GST_FLOW_NOT_LINKED || r == GST_FLOW_EOS) return GST_FLOW_OK;
    return r;
}

void SrcFlowPads::end() {
    for (auto& p : pads_) {
        if (p) gst_pad_push_event(p->pad, gst_event_new_eos());
    }
}

} // namespace rdmastream::gst
