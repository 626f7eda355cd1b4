// SPDX-License-Identifier: LGPL-2.1-or-later
/**
 * SECTION:element-rdmasink
 * @title: rdmasink
 *
 * Sends every buffer as one frame over RDMA (RoCE, InfiniBand, iWARP or
 * Soft-RoCE) to an rdmasrc, or to the `rdmarecv` program. The caps travel
 * with the stream: the receiver outputs exactly what was negotiated here.
 *
 * Raw video is zero-copy when upstream takes the buffer pool rdmasink
 * offers (its memory is registered with the NIC); other buffers, such as
 * encoded frames, are copied once into registered memory (counted in
 * #GstRdmaSink:stats).
 *
 * Each frame takes its side data along: a #GstVideoCaptionMeta of type
 * CEA708_RAW, a #GstVideoTimeCodeMeta, and the caps' mastering-display-info
 * and content-light-level. rdmasrc gives them back the same way.
 *
 * A programme's sound goes into a request pad "sink_N" (flow N of the
 * stream; "sink" is flow 0, the picture), copied once per buffer into
 * registered memory, with its pts on the same clock. Every pad's caps go
 * out before the stream's first frame, and the stream ends when every pad
 * had its EOS.
 *
 * ## Example launch line
 * |[
 * gst-launch-1.0 videotestsrc ! video/x-raw,format=I420,width=1280,height=720 ! rdmasink host=192.168.1.2
 * ]| Sends test video to an rdmasrc listening on 192.168.1.2 (port 18515).
 * |[
 * gst-launch-1.0 rdmasink name=s host=192.168.1.2 videotestsrc is-live=true ! queue ! s.sink audiotestsrc is-live=true ! queue ! s.sink_1
 * ]| The same with a tone beside the picture.
 */
#include "rdmasink.hpp"
#include "rdmasink_flows.hpp"

#include "rdmakey.hpp"

#include "rdmaallocator.hpp"

#include "rdmastream/error.hpp"

#include <gst/video/gstvideopool.h>

#include <fmt/format.h>

#include <array>

GST_DEBUG_CATEGORY(gst_rdma_sink_debug);
#undef GST_CAT_DEFAULT // (a unity build may have another file's)
#define GST_CAT_DEFAULT gst_rdma_sink_debug

using namespace rdmastream;
using namespace rdmastream::gst;

// rdmasink's own properties; those both elements have are rdmaprops.hpp's.
enum : guint {
    PROP_POLICY = kFirstOwnProperty,
    PROP_OFFER_POOL,
};
// Where each of them lives in the settings (rdmaprops.hpp's Field).
constexpr std::array<Field<SinkSettings>, 2> kSinkFields = {
    field<&SinkSettings::policy>(PROP_POLICY),
    field<&SinkSettings::offer_pool>(PROP_OFFER_POOL),
};

// GLib's type macros expand to C casts; nothing else here needs the exemption.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wold-style-cast"
G_DEFINE_TYPE_WITH_CODE(GstRdmaSink, gst_rdma_sink, GST_TYPE_BASE_SINK,
                        G_IMPLEMENT_INTERFACE(GST_TYPE_URI_HANDLER, uri_handler_init<GST_URI_SINK>))
#pragma GCC diagnostic pop
// Rank none, like udpsink: gst_element_make_from_uri finds a sink of any
// rank, and a ranked sink would be a candidate wherever sinks are autoplugged.
GST_ELEMENT_REGISTER_DEFINE(rdmasink, "rdmasink", GST_RANK_NONE, GST_TYPE_RDMA_SINK)

// What the sink carries: video, raw (any layout GstVideoInfo reads; a
// format it does not know travels opaque) or encoded, and still images, in
// system memory (it maps every buffer for the NIC; GL or other memory
// features would need a download it does not do). Not audio, RTP or other
// data: rdmastream moves frames.
static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE(
    "sink", GST_PAD_SINK, GST_PAD_ALWAYS,
    GST_STATIC_CAPS("video/x-raw; video/x-bayer; image/jpeg; image/png; image/x-j2c; image/x-jpc; video/x-h264; "
                    "video/x-h265; video/x-vp8; video/x-vp9; video/x-av1; video/mpeg; video/x-prores; "
                    "video/x-dnxhd; video/x-ffv; video/x-huffyuv; video/x-theora; video/x-jpeg-xs; video/x-divx; "
                    "video/x-xvid; video/x-h263; video/x-wmv"));

// A programme's flows after the first (its sound): sink_1, sink_2, ...,
// flow N of the stream (rdmasink_flows.hpp). Audio, raw or encoded.
static GstStaticPadTemplate sink_flow_template = GST_STATIC_PAD_TEMPLATE(
    "sink_%u", GST_PAD_SINK, GST_PAD_REQUEST,
    GST_STATIC_CAPS("audio/x-raw; audio/mpeg; audio/x-opus; audio/x-ac3; audio/x-eac3; audio/x-flac; audio/x-alaw; "
                    "audio/x-mulaw"));

namespace {

GstStructure* stats_structure(const SinkCounters& c) {
    GstStructure* s =
        gst_structure_new("GstRdmaSinkStats", "frames", G_TYPE_UINT64, c.frames, "bytes", G_TYPE_UINT64, c.bytes,
                          "drops", G_TYPE_UINT64, c.drops, "credit-waits", G_TYPE_UINT64, c.credit_waits, "copies",
                          G_TYPE_UINT64, c.copies, "latency-mean-us", G_TYPE_DOUBLE, c.latency_mean_us,
                          "latency-max-us", G_TYPE_DOUBLE, c.latency_max_us, nullptr);
    add_path_fields(s, c.paths);
    return s;
}

// The stats-interval tick (the clock's thread): the counters render() last published.
GstStructure* published_stats(GstElement* element) {
    auto* self = GST_RDMA_SINK(element);
    GST_OBJECT_LOCK(self);
    GstStructure* s = stats_structure(self->m.published);
    GST_OBJECT_UNLOCK(self);
    return s;
}

void keepalive_loop(GstRdmaSink* self) {
    SinkDriver& d = self->m.driver;
    std::unique_lock lock(d.mutex);
    while (!d.wake.wait_for(lock, std::chrono::milliseconds(250), [&] { return d.stopping; })) {
        SinkState* st = self->m.state.get();
        if (st == nullptr || !st->sender || st->finished) {
            continue;
        }
        try {
            st->sender->progress();
            receiver_left(self, *st); // if it left, the next frame returns EOS upstream
        } catch (const std::exception& e) {
            // The streaming thread meets the same failure at its next frame
            // and posts the error; with no frames coming, post it here.
            GST_ELEMENT_ERROR(self, RESOURCE, WRITE, ("The RDMA connection failed"), ("%s", e.what()));
            st->finished = true;
        }
    }
}

} // namespace

// Connects (or waits for the receiver), then offers the pool from here on:
// the memory domain our pool allocates from exists only once connected.
static gboolean gst_rdma_sink_start(GstBaseSink* sink) {
    auto* self = GST_RDMA_SINK(sink);
    GST_OBJECT_LOCK(self);
    const SinkSettings s = self->m.settings;
    GST_OBJECT_UNLOCK(self);

    auto state = std::make_unique<SinkState>();
    state->side_data = SinkSideData(GST_OBJECT(self), gst_rdma_sink_debug);
    state->timeout = std::chrono::milliseconds(s.timeout_ms);
    SenderConfig config;
    config.policy = s.policy == SendPolicy::kLive ? Policy::kLive : Policy::kLossless;
    config.device = s.device;
    config.device_b = s.device_b;
    config.poll_mode = s.poll_mode;
    config.log = [self](const std::string& line) { // each path's loss and return
        GST_ELEMENT_WARNING(self, RESOURCE, WRITE, ("%s", line.c_str()), (nullptr));
    };
    config.waker = self->m.waker; // unlock() ends the wait for the receiver too
    config.open_timeout = std::chrono::milliseconds(s.connect_timeout_ms);
    // A copied frame waits for its staging chunk's last frame (take_staging):
    // writes signalled often enough for kStagingBuffers frames out, so a
    // receiver that holds its frames never leaves that wait to the keepalive.
    // (Frames from our pool may be out besides: this only sets how often
    // the transport asks for completions.)
    config.max_in_flight = kStagingBuffers;
    state->in_flight = std::make_shared<FramesInFlight>();
    // Frames in flight: one per slot, plus the live policy's pending one,
    // plus what a format change waits for; never more than this.
    state->in_flight->reserve(kMaxSenderSlots + kStagingBuffers + 2);
    config.on_done = [out = state->in_flight](std::uint64_t cookie, FrameFate) { release_frame(*out, cookie); };
    const Endpoint ep{s.host, static_cast<std::uint16_t>(s.port)};
    const Endpoint ep_b{s.host_b, static_cast<std::uint16_t>(s.path_b_port())};
    try {
        config.key = load_key_file(GST_ELEMENT(self), s.key_file);
        if (s.role == Role::kConnect) {
            if (s.host.empty()) {
                throw UserError("role=connect needs the receiver's address: set the host property");
            }
            GST_INFO_OBJECT(self, "connecting to %s:%u (for up to %u ms)", s.host.c_str(), s.port, s.connect_timeout_ms);
            Door door = Door::dial(ep);
            if (s.host_b.empty()) {
                state->sender = Sender::open(door, config);
            } else {
                Door door_b = Door::dial(ep_b);
                state->sender = Sender::open(door, door_b, config);
            }
        } else {
            AllowList allow;
            allow.add(s.allow);
            // One warning per refused receiver; the wait goes on for a good one.
            const auto warn = [self](const std::string& line) {
                GST_ELEMENT_WARNING(self, RESOURCE, WRITE, ("%s", line.c_str()), (nullptr));
            };
            Door door = Door::listen(ep, allow, warn, pending_limits(s));
            GST_INFO_OBJECT(self, "waiting for a receiver on %s (for up to %u ms)", door.describe().c_str(),
                            s.connect_timeout_ms);
            if (s.host_b.empty()) {
                state->sender = Sender::open(door, config); // keeps the listener: later receivers hear "busy"
            } else {
                Door door_b = Door::listen(ep_b, allow, warn, pending_limits(s));
                state->sender = Sender::open(door, door_b, config);
            }
        }
    } catch (const std::exception& e) {
        GST_ELEMENT_ERROR(self, RESOURCE, OPEN_WRITE,
                          ("Could not %s RDMA receiver %s:%u", s.role == Role::kConnect ? "connect to" : "wait for",
                           s.host.empty() ? "*" : s.host.c_str(), s.port),
                          ("%s", e.what()));
        return FALSE;
    }
    if (!state->sender) { // unlock() woke the wait: flushing, not a failure of the stream
        GST_INFO_OBJECT(self, "flushing: stopped waiting for the receiver");
        return FALSE;
    }
    GST_INFO_OBJECT(self, "connected: the receiver's ring has %u slots of %u bytes", state->sender->ring_slots(),
                    state->sender->ring_slot_size());
    state->allocator = rdma_allocator_new(state->sender->memory());

    state->two_paths = !s.host_b.empty();
    SinkCounters first;
    if (state->two_paths) first.paths = state->sender->paths();
    GST_OBJECT_LOCK(self);
    self->m.published = std::move(first);
    GST_OBJECT_UNLOCK(self);
    self->m.ticker.start(GST_ELEMENT(self), std::chrono::milliseconds(s.stats_interval_ms), published_stats);
    std::lock_guard lock(self->m.driver.mutex);
    self->m.state = std::move(state);
    self->m.driver.stopping = false;
    self->m.driver.keepalive = std::thread(keepalive_loop, self);
    return TRUE;
}

static gboolean gst_rdma_sink_stop(GstBaseSink* sink) {
    auto* self = GST_RDMA_SINK(sink);
    self->m.ticker.stop();
    SinkDriver& d = self->m.driver;
    {
        std::lock_guard lock(d.mutex);
        d.stopping = true;
    }
    d.wake.notify_all();
    if (d.keepalive.joinable()) {
        d.keepalive.join();
    }
    std::unique_ptr<SinkState> st = std::move(self->m.state); // leaves it empty
    if (!st) {
        return TRUE;
    }
    if (!st->finished) {
        GST_INFO_OBJECT(self, "stopping mid-stream after %" G_GUINT64_FORMAT " frames", st->counters.frames);
    }
    // In this order, so the NIC never reads memory that is gone: stop the
    // sender and wait until the NIC let go of every frame in flight (they
    // come back through on_done), then the staging memory, then our
    // references to the pool's allocator and the sender. Buffers of our
    // pool still upstream keep their FrameMemory, registration included,
    // until the last of them goes.
    st->sender->stop();
    st->staging.memory = FrameMemory();
    for (SinkFlowOut& f : st->flows) {
        f.staging.memory = FrameMemory();
    }
    for (const std::uint64_t cookie : FramesInFlight(*st->in_flight)) {
        release_frame(*st->in_flight, cookie); // none is left in flight: these were never handed over
    }
    gst_object_unref(st->allocator);
    st->allocator = nullptr;
    st->sender.reset();
    return TRUE;
}

static gboolean gst_rdma_sink_set_caps(GstBaseSink* sink, GstCaps* caps) {
    auto* self = GST_RDMA_SINK(sink);
    std::lock_guard lock(self->m.driver.mutex);
    SinkState* st = self->m.state.get();
    if (st == nullptr) {
        return FALSE;
    }
    gchar* text = gst_caps_to_string(caps);
    st->caps = text;
    g_free(text);
    const GstStructure* s = gst_caps_get_structure(caps, 0);
    st->raw_video = gst_structure_has_name(s, "video/x-raw") && gst_video_info_from_caps(&st->info, caps);
    st->planes = st->raw_video ? planes_of(st->info) : PlaneSet{};
    st->side_data.set_caps(caps); // its HDR fields go with every frame
    st->format_dirty = true; // announced with the next frame, in stream order
    GST_INFO_OBJECT(self, "caps %s (%s)", st->caps.c_str(), st->raw_video ? "raw video" : "opaque");
    self->m.driver.flows_changed.notify_all(); // a flow waiting for every format (flows_announced)
    return TRUE;
}

// Raw video: a pool of buffers in registered memory, and our allocator for
// elements that allocate memory themselves. Opaque streams get nothing:
// encoders allocate a fresh buffer of a new size per frame, and registering
// each with the NIC costs more than the one copy into staging memory.
static gboolean gst_rdma_sink_propose_allocation(GstBaseSink* sink, GstQuery* query) {
    auto* self = GST_RDMA_SINK(sink);
    GstCaps* caps = nullptr;
    gboolean need_pool = FALSE;
    gst_query_parse_allocation(query, &caps, &need_pool);
    GST_OBJECT_LOCK(self);
    const bool offer = self->m.settings.offer_pool;
    GST_OBJECT_UNLOCK(self);
    GstAllocator* allocator = self->m.state != nullptr ? self->m.state->allocator : nullptr;
    GstVideoInfo info;
    if (caps == nullptr || !offer || allocator == nullptr ||
        !gst_structure_has_name(gst_caps_get_structure(caps, 0), "video/x-raw") ||
        !gst_video_info_from_caps(&info, caps)) {
        GST_DEBUG_OBJECT(self, "no pool offered for %" GST_PTR_FORMAT, static_cast<void*>(caps));
        return TRUE;
    }
    GstAllocationParams params;
    gst_allocation_params_init(&params);
    gst_query_add_allocation_param(query, allocator, &params);
    if (need_pool) {
        GstBufferPool* pool = gst_video_buffer_pool_new();
        GstStructure* config = gst_buffer_pool_get_config(pool);
        const guint size = static_cast<guint>(info.size);
        gst_buffer_pool_config_set_params(config, caps, size, 2, 0);
        gst_buffer_pool_config_set_allocator(config, allocator, &params);
        gst_buffer_pool_config_add_option(config, GST_BUFFER_POOL_OPTION_VIDEO_META);
        if (!gst_buffer_pool_set_config(pool, config)) {
            GST_WARNING_OBJECT(self, "our pool refused its own config");
            gst_object_unref(pool);
            return TRUE;
        }
        gst_query_add_allocation_pool(query, pool, size, 2, 0);
        gst_object_unref(pool);
        GST_DEBUG_OBJECT(self, "offered a pool of registered %u-byte buffers", size);
    }
    gst_query_add_allocation_meta(query, GST_VIDEO_META_API_TYPE, nullptr);
    return TRUE;
}

// End of stream: every frame delivered, then the transport's end-of-stream
// message, so rdmasrc sends EOS downstream (not an error).
static gboolean gst_rdma_sink_event(GstBaseSink* sink, GstEvent* event) {
    auto* self = GST_RDMA_SINK(sink);
    if (GST_EVENT_TYPE(event) == GST_EVENT_EOS) {
        std::unique_lock lock(self->m.driver.mutex);
        // A programme ends when its last flow does: the others' EOS first.
        const bool all_ended = flows_ended(self, lock);
        SinkState* st = self->m.state.get();
        if (all_ended && st != nullptr && st->sender && !st->finished) {
            try {
                st->sender->finish(st->timeout);
                st->finished = true;
                if (!receiver_left(self, *st)) { // if it left, it had them all: EOS as any other
                    GST_INFO_OBJECT(self, "end of stream sent after %" G_GUINT64_FORMAT " frames",
                                    st->counters.frames);
                }
            } catch (const std::exception& e) {
                st->finished = true;
                GST_ELEMENT_ERROR(self, RESOURCE, WRITE, ("Could not end the RDMA stream cleanly"), ("%s", e.what()));
                gst_event_unref(event);
                return FALSE;
            }
        }
    }
    return GST_BASE_SINK_CLASS(gst_rdma_sink_parent_class)->event(sink, event);
}

// GStreamer's unlock contract: a render blocked in a wait returns at once
// (the flag first, then the wake, so the woken render sees the flag).
static gboolean gst_rdma_sink_unlock(GstBaseSink* sink) {
    auto* self = GST_RDMA_SINK(sink);
    self->m.flushing.store(true);
    self->m.waker->wake();
    wake_flow_waits(self);
    return TRUE;
}

static gboolean gst_rdma_sink_unlock_stop(GstBaseSink* sink) {
    auto* self = GST_RDMA_SINK(sink);
    self->m.flushing.store(false);
    self->m.waker->take(); // a wake no wait took is stale now
    return TRUE;
}

static SinkSettings& settings_of(GObject* object) {
    return GST_RDMA_SINK(object)->m.settings;
}

static void gst_rdma_sink_finalize(GObject* object) {
    auto* self = GST_RDMA_SINK(object);
    self->m.~SinkMembers();
    G_OBJECT_CLASS(gst_rdma_sink_parent_class)->finalize(object);
}

static void gst_rdma_sink_class_init(GstRdmaSinkClass* klass) {
    auto* gobject_class = G_OBJECT_CLASS(klass);
    auto* element_class = GST_ELEMENT_CLASS(klass);
    auto* basesink_class = GST_BASE_SINK_CLASS(klass);
    GST_DEBUG_CATEGORY_INIT(gst_rdma_sink_debug, "rdmasink", 0, "RDMA frame sender");

    gobject_class->set_property = set_property_vfunc<settings_of, kSinkFields>;
    gobject_class->get_property =
        get_property_vfunc<settings_of, kSinkFields, published_stats>;
    gobject_class->finalize = gst_rdma_sink_finalize;

    install_shared_properties(
        gobject_class,
        {.host = "role=connect: the receiver's address (name or IP on its RDMA device). role=listen: the local "
                 "address to listen on (empty: every address)",
         .role = "Who opens the connection: connect (default, like udpsink) dials the receiver at host:port; "
                 "listen waits for a receiver to dial in",
         .connect_timeout = "Milliseconds to keep retrying the connection (role=connect) or to wait for the "
                            "receiver (role=listen) when the element starts",
         .timeout = "Milliseconds a frame may wait for a free receiver slot (lossless) before the receiver is "
                    "declared stuck and the element errors out",
         .allow = "role=listen: receivers that may connect, ADDR or ADDR/PREFIX (IPv4 or IPv6), separated by "
                  "commas; others are refused at their connect request. Empty: everyone",
         .stats = "Counters of the running stream: frames, bytes, drops (live policy), credit-waits (frames that "
                  "waited for a free slot), copies (frames not in registered memory), latency-mean-us and "
                  "latency-max-us (from posting a frame to its delivery)"},
        SinkSettings{});
    const auto rw = static_cast<GParamFlags>(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);
    g_object_class_install_property(
        gobject_class, PROP_POLICY,
        g_param_spec_enum("policy", "Policy",
                          "When every receiver slot is taken: lossless waits (backpressure upstream), live drops "
                          "the older waiting frame so the newest always goes out",
                          send_policy_get_type(), static_cast<int>(kSinkDefaultPolicy), rw));
    g_object_class_install_property(
        gobject_class, PROP_OFFER_POOL,
        g_param_spec_boolean("offer-pool", "Offer pool",
                             "Offer upstream a pool of buffers in NIC-registered memory (zero copy). Off: every raw "
                             "frame is copied once into registered staging memory (to compare, or to debug)",
                             kSinkDefaultOfferPool, rw));

    gst_element_class_add_static_pad_template(element_class, &sink_template);
    gst_element_class_add_static_pad_template(element_class, &sink_flow_template);
    element_class->request_new_pad = request_flow_pad;
    element_class->release_pad = release_flow_pad;
    gst_element_class_set_static_metadata(element_class, "RDMA sink", "Sink/Network",
                                          "Sends buffers as frames over RDMA, zero-copy from its own buffer pool",
                                          "rdmastream developers");
    gst_type_mark_as_plugin_api(send_policy_get_type(), static_cast<GstPluginAPIFlags>(0));

    basesink_class->start = gst_rdma_sink_start;
    basesink_class->stop = gst_rdma_sink_stop;
    basesink_class->set_caps = gst_rdma_sink_set_caps;
    basesink_class->propose_allocation = gst_rdma_sink_propose_allocation;
    basesink_class->event = gst_rdma_sink_event;
    basesink_class->unlock = gst_rdma_sink_unlock;
    basesink_class->unlock_stop = gst_rdma_sink_unlock_stop;
    basesink_class->render = gst_rdma_sink_render;
}

static void gst_rdma_sink_init(GstRdmaSink* self) {
    new (&self->m) SinkMembers(); // GObject zeroed the memory; the members construct here
    // Frames go out as they come: the receiver paces (credits), not the clock.
    gst_base_sink_set_sync(GST_BASE_SINK(self), FALSE);
}

