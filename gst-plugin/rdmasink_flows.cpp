// SPDX-License-Identifier: LGPL-2.1-or-later
#include "rdmasink_flows.hpp"

#include "rdmasink.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <string>

#undef GST_CAT_DEFAULT // (a unity build may have another file's)
#define GST_CAT_DEFAULT gst_rdma_sink_debug

namespace rdmastream::gst {

namespace {

std::uint8_t flow_of(GstPad* pad) {
    return static_cast<std::uint8_t>(GPOINTER_TO_UINT(gst_pad_get_element_private(pad)));
}

// A request pad's events: its caps (announced before its next frame), its
// segment (its running time), its EOS (the stream ends once every pad had
// one). Nothing goes further:
// rdmasink has no source pad.
gboolean flow_event(GstPad* pad, GstObject* parent, GstEvent* event) {
    auto* self = GST_RDMA_SINK(parent);
    const std::uint8_t flow = flow_of(pad);
    if (GST_EVENT_TYPE(event) == GST_EVENT_SEGMENT) {
        const GstSegment* segment = nullptr;
        gst_event_parse_segment(event, &segment);
        std::lock_guard lock(self->m.driver.mutex);
        gst_segment_copy_into(segment, &self->m.flow_pads[flow].segment);
    } else if (GST_EVENT_TYPE(event) == GST_EVENT_CAPS || GST_EVENT_TYPE(event) == GST_EVENT_EOS ||
        GST_EVENT_TYPE(event) == GST_EVENT_STREAM_START) {
        std::string caps;
        if (GST_EVENT_TYPE(event) == GST_EVENT_CAPS) {
            GstCaps* c = nullptr;
            gst_event_parse_caps(event, &c);
            gchar* text = gst_caps_to_string(c);
            caps = text;
            g_free(text);
        }
        {
            std::lock_guard lock(self->m.driver.mutex);
            SinkFlowPad& p = self->m.flow_pads[flow];
            if (GST_EVENT_TYPE(event) == GST_EVENT_CAPS) {
                GST_INFO_OBJECT(self, "pad %s (flow %u): caps %s", GST_PAD_NAME(pad), flow, caps.c_str());
                p.caps = std::move(caps);
                if (self->m.state != nullptr) self->m.state->flows[flow].format_dirty = true;
            } else {
                p.ended = GST_EVENT_TYPE(event) == GST_EVENT_EOS; // a stream-start begins a new one
            }
        }
        self->m.driver.flows_changed.notify_all();
    }
    gst_event_unref(event);
    return TRUE;
}

// The pads still without caps, named for the error ("sink, sink_2").
std::string without_caps(GstRdmaSink* self, const SinkState& st) {
    std::string names = st.caps.empty() ? "sink" : "";
    for (std::size_t n = 1; n < kMaxFlows; ++n) {
        const SinkFlowPad& p = self->m.flow_pads[n];
        if (p.pad != nullptr && p.caps.empty() && !p.ended) {
            names += fmt::format("{}sink_{}", names.empty() ? "" : ", ", n);
        }
    }
    return names;
}

bool any_requested(GstRdmaSink* self) {
    for (std::size_t n = 1; n < kMaxFlows; ++n) {
        if (self->m.flow_pads[n].pad != nullptr) return true;
    }
    return false;
}

} // namespace

GstPad* request_flow_pad(GstElement* element, GstPadTemplate* templ, const gchar* name, const GstCaps*) {
    auto* self = GST_RDMA_SINK(element);
    std::unique_lock lock(self->m.driver.mutex);
    unsigned long flow = 0;
    if (name != nullptr) { // "sink_N": flow N
        char* end = nullptr;
        flow = g_str_has_prefix(name, "sink_") ? std::strtoul(name + 5, &end, 10) : 0;
        if (end == nullptr || *end != '\0' || end == name + 5 || flow == 0 || flow >= kMaxFlows) {
            GST_ELEMENT_WARNING(self, CORE, PAD, ("No pad %s on rdmasink", name),
                                ("request pads are sink_1 to sink_%zu (flow N of the stream; sink is flow 0)",
                                 kMaxFlows - 1));
            return nullptr;
        }
        if (self->m.flow_pads[flow].pad != nullptr) {
            GST_ELEMENT_WARNING(self, CORE, PAD, ("Pad %s of rdmasink is taken", name), (nullptr));
            return nullptr;
        }
    } else {
        for (flow = 1; flow < kMaxFlows && self->m.flow_pads[flow].pad != nullptr; ++flow) {
        }
        if (flow == kMaxFlows) {
            GST_ELEMENT_WARNING(self, CORE, PAD, ("rdmasink has no pad left"),
                                ("a stream carries at most %zu flows", kMaxFlows));
            return nullptr;
        }
    }
    const std::string pad_name = fmt::format("sink_{}", flow);
    GstPad* pad = gst_pad_new_from_template(templ, pad_name.c_str());
    gst_pad_set_element_private(pad, GUINT_TO_POINTER(flow));
    gst_pad_set_chain_function(pad, gst_rdma_sink_flow_chain);
    gst_pad_set_event_function(pad, flow_event);
    self->m.flow_pads[flow] = SinkFlowPad{};
    self->m.flow_pads[flow].pad = pad;
    gst_segment_init(&self->m.flow_pads[flow].segment, GST_FORMAT_TIME);
    if (self->m.state != nullptr && self->m.state->flows_announced) {
        GST_ELEMENT_WARNING(self, STREAM, FORMAT, ("Pad %s was requested after the stream began", pad_name.c_str()),
                            ("its flow's format goes out with its first buffer, after the stream's first frame: "
                             "rdmasrc makes its pads at that frame and will not push this flow"));
    }
    lock.unlock();
    gst_element_add_pad(element, pad); // activated here when the element runs
    return pad;
}

void release_flow_pad(GstElement* element, GstPad* pad) {
    auto* self = GST_RDMA_SINK(element);
    {
        std::lock_guard lock(self->m.driver.mutex);
        self->m.flow_pads[flow_of(pad)] = SinkFlowPad{}; // no longer waited for
    }
    self->m.driver.flows_changed.notify_all();
    gst_pad_set_active(pad, FALSE);
    gst_element_remove_pad(element, pad);
}

bool flows_announced(GstRdmaSink* self, std::unique_lock<std::mutex>& lock, SinkState& st) {
    if (st.flows_announced) {
        return true;
    }
    if (!any_requested(self)) { // one flow: announced by render, as always
        st.flows_announced = true;
        return true;
    }
    const auto ready = [&] {
        if (self->m.flushing.load()) return true;
        return without_caps(self, st).empty();
    };
    if (!self->m.driver.flows_changed.wait_for(lock, st.timeout, ready)) {
        GST_ELEMENT_ERROR(self, STREAM, FORMAT, ("Not every flow of the programme has its format"),
                          ("no caps on %s within %lld ms (the timeout property): every pad's format goes out before "
                           "the stream's first frame; link every requested pad, or release it",
                           without_caps(self, st).c_str(), static_cast<long long>(st.timeout.count())));
        return false;
    }
    if (self->m.flushing.load()) {
        return false;
    }
    announce(self, st, st.planes, st.raw_video ? st.info.size : 0);
    for (std::size_t n = 1; n < kMaxFlows; ++n) {
        const SinkFlowPad& p = self->m.flow_pads[n];
        if (p.pad != nullptr && !p.caps.empty()) {
            st.flows[n].format_dirty = true;
            announce_flow(self, st, static_cast<std::uint8_t>(n), 0);
        }
    }
    st.flows_announced = true;
    return true;
}

bool flows_ended(GstRdmaSink* self, std::unique_lock<std::mutex>& lock) {
    self->m.driver.flows_changed.wait(lock, [&] {
        if (self->m.flushing.load()) return true;
        for (std::size_t n = 1; n < kMaxFlows; ++n) {
            const SinkFlowPad& p = self->m.flow_pads[n];
            if (p.pad != nullptr && !p.ended) return false;
        }
        return true;
    });
    return !self->m.flushing.load();
}

void wake_flow_waits(GstRdmaSink* self) {
    { std::lock_guard lock(self->m.driver.mutex); } // a waiter is in its wait, or sees the flag
    self->m.driver.flows_changed.notify_all();
}

} // namespace rdmastream::gst
