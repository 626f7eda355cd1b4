// SPDX-License-Identifier: LGPL-2.1-or-later
// GstSink's control path: build and start the pipeline, take each format as
// caps, wait for EOS at the end, turn bus errors into one line. The
// per-frame path is gst_sink_push.cpp.
#include "gst_sink.hpp"

#include "rdmastream/error.hpp"

#include <gst/app/gstappsrc.h>

#include <fmt/format.h>

#include <cstdio>
#include <regex>

namespace rdmastream::cli {
namespace {
constexpr const char* kSourceName = "rdmarecv_src";
constexpr const char* kStatsName = "rdmastats";
constexpr GstClockTime kEosPatience = 30 * GST_SECOND; // frames still queued play out at their pace
// Where the side data's one-time warnings are logged (GST_DEBUG=rdmarecv:4).
GST_DEBUG_CATEGORY_STATIC(rdmarecv_gst);

} // namespace

GstSink::GstSink(const std::string& pipeline, SlotReleaseQueue& released, std::uint32_t copy_threshold)
    : description_(pipeline),
      released_(released),
      // the ring: see the member's comment; a freed buffer wakes the receive
      // loop. By slot number: every number a frame may carry (two paths
      // number theirs apart).
      buffers_(released.capacity(), nullptr, released.waker()),
      copy_threshold_(copy_threshold),
      texts_(released.capacity()) {
    gst_init(nullptr, nullptr);
    // An appsrc for every flow the description links from (`flowN.`).
    std::string flow_sources;
    const std::regex reference(R"((^|[\s!])flow([1-9][0-9]?)\.)");
    std::array<bool, kMaxFlows> named{};
    for (auto m = std::sregex_iterator(pipeline.begin(), pipeline.end(), reference); m != std::sregex_iterator(); ++m) {
        const unsigned long flow = std::stoul((*m)[2].str());
        if (flow >= kMaxFlows) {
            throw UserError(fmt::format("--gst \"{}\": flow{}: a stream has flows 0 to {}", pipeline, flow,
                                        kMaxFlows - 1));
        }
        if (!named[flow]) flow_sources += fmt::format("appsrc name=flow{} ", flow);
        named[flow] = true;
    }
    const std::string full = fmt::format("{}appsrc name={} ! {}", flow_sources, kSourceName, pipeline);
    GError* raw_error = nullptr;
    GstElement* raw = gst_parse_launch(full.c_str(), &raw_error);
    const GErrorPtr error(raw_error);
    if (raw != nullptr) pipeline_.reset(GST_ELEMENT(gst_object_ref_sink(raw))); // parse_launch: floating
    if (error || !pipeline_ || !GST_IS_PIPELINE(pipeline_.get())) {
        throw UserError(fmt::format("--gst \"{}\": {}: check the element names and properties "
                                    "(gst-inspect-1.0 ELEMENT lists them)",
                                    pipeline, error ? error->message : "not a pipeline"));
    }
    appsrc_.reset(gst_bin_get_by_name(GST_BIN(pipeline_.get()), kSourceName));
    GST_DEBUG_CATEGORY_INIT(rdmarecv_gst, "rdmarecv", 0, "rdmarecv --gst");
    side_data_.emplace(appsrc_.get(), rdmarecv_gst);
    // Not live: the pipeline starts its clock at the first frame (it
    // prerolls on it) and plays frames at their timestamps from there.
    g_object_set(appsrc_.get(), "format", GST_FORMAT_TIME, "is-live", FALSE, "stream-type",
                 GST_APP_STREAM_TYPE_STREAM, nullptr);
    for (std::size_t flow = 1; flow < kMaxFlows; ++flow) {
        if (!named[flow]) continue;
        flows_[flow].appsrc.reset(gst_bin_get_by_name(GST_BIN(pipeline_.get()), fmt::format("flow{}", flow).c_str()));
        g_object_set(flows_[flow].appsrc.get(), "format", GST_FORMAT_TIME, "is-live", FALSE, "stream-type",
                     GST_APP_STREAM_TYPE_STREAM, nullptr);
    }
    if (copy_threshold_ > 0) {
        GstPad* out = gst_element_get_static_pad(appsrc_.get(), "src");
        gst_pad_add_probe(out, GST_PAD_PROBE_TYPE_BUFFER, &GstSink::copy_if_held, this, nullptr);
        gst_object_unref(out);
    }
    if (GstElement* stats = gst_bin_get_by_name(GST_BIN(pipeline_.get()), kStatsName)) {
        const GParamSpec* text = g_object_class_find_property(G_OBJECT_GET_CLASS(stats), "text");
        GstPad* pad = gst_element_get_static_pad(stats, "video_sink"); // textoverlay's
        if (pad == nullptr) pad = gst_element_get_static_pad(stats, "sink");
        if (text != nullptr && text->value_type == G_TYPE_STRING && (text->flags & G_PARAM_WRITABLE) && pad) {
            stats_.reset(stats);
            gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_BUFFER, &GstSink::label_frame, this, nullptr);
            gst_object_unref(pad);
        } else {
            if (pad) gst_object_unref(pad);
            std::fprintf(stderr, "rdmarecv: --gst: the element named %s has no string property \"text\"; no frame "
                                 "stats shown (name a textoverlay rdmastats)\n", kStatsName);
            gst_object_unref(stats);
        }
    }
    bus_.reset(gst_element_get_bus(pipeline_.get()));
    // An error or EOS wakes the receive loop, which then looks at the bus
    // (check()), instead of finding it at its next frame.
    gst_bus_set_sync_handler(
        bus_.get(),
        [](GstBus*, GstMessage* m, gpointer waker) {
            if (GST_MESSAGE_TYPE(m) == GST_MESSAGE_ERROR || GST_MESSAGE_TYPE(m) == GST_MESSAGE_EOS) {
                static_cast<Waker*>(waker)->wake();
            }
            return GST_BUS_PASS;
        },
        released.waker().get(), nullptr);
    if (gst_element_set_state(pipeline_.get(), GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE) {
        GstMessagePtr m(gst_bus_pop_filtered(bus_.get(), GST_MESSAGE_ERROR));
        if (m) throw_error(m.get(), true);
        throw UserError(fmt::format("--gst \"{}\": the pipeline cannot start (GStreamer gives no reason; "
                                    "GST_DEBUG=3 shows more)",
                                    pipeline));
    }
}

GstSink::~GstSink() {
    // Stops the streaming threads and frees every buffer still in the
    // pipeline while the ring lives; buffers_ goes after the pipeline.
    if (pipeline_) gst_element_set_state(pipeline_.get(), GST_STATE_NULL);
}

void GstSink::start_programme(std::uint16_t flows) {
    for (std::size_t flow = 1; flow < kMaxFlows; ++flow) {
        if ((flows & (1u << flow)) != 0 && !flows_[flow].appsrc) {
            std::fprintf(stderr, "rdmarecv: --gst: the pipeline does not take flow %zu: link from flow%zu. in it "
                                 "(e.g. \"... flow%zu. ! audioconvert ! autoaudiosink\")\n",
                         flow, flow, flow);
        }
    }
}

bool GstSink::takes(const StreamLayout& stream) {
    const std::uint8_t flow = stream.layout.format().flow;
    return flow == 0 || (flow < kMaxFlows && flows_[flow].appsrc != nullptr);
}

void GstSink::start_format(const StreamLayout& stream) {
    if (const std::uint8_t flow = stream.layout.format().flow; flow != 0) {
        // A flow after the first: its frames are copied into a pool of
        // their size; planar audio gets its GstAudioMeta there.
        FlowSrc& f = flows_[flow];
        f.stream = &stream;
        f.audio.reset();
        GstCaps* caps = stream.layout.caps();
        if (stream.audio) {
            GstAudioInfo info;
            if (!gst_audio_info_from_caps(&info, caps)) {
                throw UserError(fmt::format("--gst: flow {}: GStreamer reads no raw audio in \"{}\"", flow,
                                            stream.layout.format().caps));
            }
            f.audio = info;
        }
        f.pool.reset(gst_buffer_pool_new());
        GstStructure* config = gst_buffer_pool_get_config(f.pool.get());
        gst_buffer_pool_config_set_params(config, caps, stream.layout.format().max_frame_size, 0, 0);
        if (!gst_buffer_pool_set_config(f.pool.get(), config) || !gst_buffer_pool_set_active(f.pool.get(), TRUE)) {
            throw std::runtime_error(fmt::format("--gst: flow {}: a pool of {}-byte buffers would not start", flow,
                                                 stream.layout.format().max_frame_size));
        }
        gst_app_src_set_caps(GST_APP_SRC(f.appsrc.get()), caps);
        return;
    }
    // The caps GStreamer read, and checked the layout by (FrameLayout):
    // downstream reads the frames by exactly these.
    if (stream.audio && av_sample_fmt_is_planar(stream.audio_caps.format)) {
        // GStreamer reads planar audio through a GstAudioMeta on each
        // buffer, which the recycled slot buffers do not carry yet.
        throw UserError(fmt::format("--gst: the sender's audio is planar ({}), which GStreamer reads through a "
                                    "GstAudioMeta rdmarecv does not attach yet: use --framemd5 or -o for it, or "
                                    "send interleaved audio (e.g. rdmasink after audioconvert)",
                                    stream.layout.format().caps));
    }
    stream_ = &stream;
    // Without HDR fields until a frame's side data brings them (consume).
    GstCaps* caps = side_data_->caps_for(stream.layout.caps(), {});
    gst_app_src_set_caps(GST_APP_SRC(appsrc_.get()), caps);
    gst_caps_unref(caps);
}

void GstSink::finish() {
    check_bus();
    gst_app_src_end_of_stream(GST_APP_SRC(appsrc_.get()));
    for (const FlowSrc& f : flows_) {
        if (f.appsrc) gst_app_src_end_of_stream(GST_APP_SRC(f.appsrc.get()));
    }
    GstMessagePtr m(gst_bus_timed_pop_filtered(bus_.get(), kEosPatience,
                                               static_cast<GstMessageType>(GST_MESSAGE_ERROR | GST_MESSAGE_EOS)));
    if (!m) {
        throw std::runtime_error(fmt::format("--gst: the pipeline did not finish within {} s of the end of the "
                                             "stream: does its sink wait for something?",
                                             kEosPatience / GST_SECOND));
    }
    if (GST_MESSAGE_TYPE(m.get()) == GST_MESSAGE_ERROR) throw_error(m.get(), false);
    gst_element_set_state(pipeline_.get(), GST_STATE_NULL);
}

void GstSink::check_bus() {
    GstMessagePtr m(gst_bus_pop_filtered(bus_.get(), static_cast<GstMessageType>(GST_MESSAGE_ERROR | GST_MESSAGE_EOS)));
    if (!m) return;
    if (GST_MESSAGE_TYPE(m.get()) == GST_MESSAGE_ERROR) throw_error(m.get(), false);
    throw std::runtime_error("--gst: the pipeline ended (EOS) before the sender ended the stream");
}

void GstSink::throw_error(GstMessage* message, bool at_start) const {
    GError* raw = nullptr;
    gchar* raw_debug = nullptr;
    gst_message_parse_error(message, &raw, &raw_debug);
    const GErrorPtr error(raw);
    const GCharPtr debug(raw_debug);
    if (debug) { // one line: GStreamer's debug text has line breaks
        for (gchar* c = debug.get(); *c != '\0'; ++c) {
            if (*c == '\n') *c = ' ';
        }
    }
    const std::string text = fmt::format("--gst pipeline: {}: {}{}{}{}", GST_OBJECT_NAME(GST_MESSAGE_SRC(message)),
                                         error ? error->message : "error", debug ? " (" : "",
                                         debug ? debug.get() : "", debug ? ")" : "");
    if (at_start) throw UserError(text + ": check the pipeline's settings");
    throw std::runtime_error(text);
}

} // namespace rdmastream::cli
