// SPDX-License-Identifier: LGPL-2.1-or-later
/**
 * SECTION:element-rdmasrc
 * @title: rdmasrc
 *
 * Receives frames over RDMA from an rdmasink (or the `rdmasend` program) and
 * pushes them as buffers that wrap the receive ring: no copy. A slot goes
 * back to the sender when downstream frees the buffer. Downstream may hold
 * #GstRdmaSrc:slots less #GstRdmaSrc:copy-threshold frames in their slots;
 * past that, each frame is copied into a buffer of rdmasrc's own pool and
 * its slot goes back at once (as v4l2src does when its driver's queue runs
 * low), so an element that holds buffers costs copies, never a stall.
 *
 * The caps are the sender's, exactly as it negotiated them; they change when
 * the sender's do. Timestamps, durations and the DISCONT, DELTA_UNIT, HEADER
 * and CORRUPTED flags are the sender's too, and a buffer's offset is its
 * frame number (a gap: frames the sender's live policy dropped). rdmasrc is
 * a live source.
 *
 * A frame's side data comes out as GStreamer holds it: CEA-708 captions as a
 * #GstVideoCaptionMeta (CEA708_RAW), its timecode as a #GstVideoTimeCodeMeta,
 * and mastering display and content light level as the caps'
 * mastering-display-info and content-light-level (the caps change when they do).
 *
 * A programme (rdmasend's picture and sound) comes out of a pad per flow:
 * the first flow (the picture) out of "src", each other flow N out of a
 * sometimes pad "src_N", added at the stream's first frame (the sender
 * announces every flow before it), then no-more-pads. playbin plays both
 * through rdmasrcbin, what rdma:// URIs make.
 * Those flows' frames are copied into buffers of a pool of their own (an
 * audio frame is a few kilobytes), their slot going back at once; raw audio
 * keeps the sender's sample format and layout (non-interleaved buffers
 * carry a #GstAudioMeta). All flows carry the sender's timestamps, on its
 * one clock.
 *
 * ## Example launch line
 * |[
 * gst-launch-1.0 rdmasrc ! videoconvert ! autovideosink sync=false
 * ]| Waits for a sender on port 18515 and shows what it sends.
 * |[
 * gst-launch-1.0 rdmasrc name=s s.src ! queue ! videoconvert ! autovideosink s.src_1 ! queue ! audioconvert ! autoaudiosink
 * ]| The same with the sender's sound (`rdmasend clip.mp4`); a queue on each
 * branch, as after a demuxer (one thread pushes every flow).
 */
#include "rdmasrc.hpp"


#include "rdmastream/error.hpp"

#include <algorithm>
#include <array>

GST_DEBUG_CATEGORY(gst_rdma_src_debug);
#undef GST_CAT_DEFAULT // (a unity build may have another file's)
#define GST_CAT_DEFAULT gst_rdma_src_debug

using namespace rdmastream;
using namespace rdmastream::gst;

// rdmasrc's own properties; those both elements have are rdmaprops.hpp's.
enum : guint {
    PROP_SLOTS = kFirstOwnProperty,
    PROP_SLOT_SIZE,
    PROP_MAX_FRAME_BYTES,
    PROP_MAX_RING_BYTES,
    PROP_HANDSHAKE_TIMEOUT,
    PROP_COPY_THRESHOLD,
    PROP_MEMORY_WINDOWS,
};
// Where each of them lives in the settings (rdmaprops.hpp's Field).
constexpr std::array<Field<SrcSettings>, 7> kSrcFields = {
    field<&SrcSettings::slots>(PROP_SLOTS),
    field<&SrcSettings::slot_size>(PROP_SLOT_SIZE),
    field<&SrcSettings::max_frame_bytes>(PROP_MAX_FRAME_BYTES),
    field<&SrcSettings::max_ring_bytes>(PROP_MAX_RING_BYTES),
    field<&SrcSettings::handshake_timeout_ms>(PROP_HANDSHAKE_TIMEOUT),
    field<&SrcSettings::copy_threshold>(PROP_COPY_THRESHOLD),
    field<&SrcSettings::memory_windows>(PROP_MEMORY_WINDOWS),
};

// GLib's type macros expand to C casts; nothing else here needs the exemption.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wold-style-cast"
G_DEFINE_TYPE_WITH_CODE(GstRdmaSrc, gst_rdma_src, GST_TYPE_PUSH_SRC,
                        G_IMPLEMENT_INTERFACE(GST_TYPE_URI_HANDLER, uri_handler_init<GST_URI_SRC>))
#pragma GCC diagnostic pop
// Primary, like srtsrc: gst_element_make_from_uri (uridecodebin, playbin)
// takes the highest-ranked handler of rdma://. Sources are not autoplugged
// otherwise (and "Source/Network" is no autovideosrc candidate).
GST_ELEMENT_REGISTER_DEFINE(rdmasrc, "rdmasrc", GST_RANK_PRIMARY, GST_TYPE_RDMA_SRC)

static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE("src", GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS_ANY);
// A programme's flows after the first (rdmasend's sound): src_1, src_2, ...
// as the sender announces them (rdmasrc_flows.hpp).
static GstStaticPadTemplate src_flow_template =
    GST_STATIC_PAD_TEMPLATE("src_%u", GST_PAD_SRC, GST_PAD_SOMETIMES, GST_STATIC_CAPS_ANY);

namespace {

GstStructure* stats_structure(const SrcCounters& c) {
    GstStructure* s =
        gst_structure_new("GstRdmaSrcStats", "frames", G_TYPE_UINT64, c.frames, "bytes", G_TYPE_UINT64, c.bytes,
                          "drops", G_TYPE_UINT64, c.drops, "format-changes", G_TYPE_UINT64, c.format_changes,
                          "copies", G_TYPE_UINT64, c.copies, "max-frame-gap-ms", G_TYPE_DOUBLE, c.max_frame_gap_ms,
                          nullptr);
    add_path_fields(s, c.paths);
    return s;
}

// The stats-interval tick (the clock's thread): the counters create() last published.
GstStructure* published_stats(GstElement* element) {
    auto* self = GST_RDMA_SRC(element);
    GST_OBJECT_LOCK(self);
    GstStructure* s = stats_structure(self->m.published);
    GST_OBJECT_UNLOCK(self);
    return s;
}

} // namespace

// role=listen binds here, so a bad address or a machine without RDMA fails
// the state change; the connection itself is made by the streaming thread
// (create), where unlock() can interrupt the wait.
static gboolean gst_rdma_src_start(GstBaseSrc* bsrc) {
    auto* self = GST_RDMA_SRC(bsrc);
    auto st = std::make_unique<SrcState>();
    st->side_data = SrcSideData(GST_ELEMENT(self), gst_rdma_src_debug);
    st->flow_pads.emplace(GST_ELEMENT(self), gst_rdma_src_debug);
    GST_OBJECT_LOCK(self);
    st->settings = self->m.settings;
    self->m.published = SrcCounters{};
    if (!st->settings.host_b.empty()) { // both paths down until a sender connects
        for (const char name : {'A', 'B'}) self->m.published.paths.emplace_back().name = name;
    }
    self->m.frame_duration = GST_CLOCK_TIME_NONE;
    GST_OBJECT_UNLOCK(self);
    const SrcSettings& s = st->settings;
    try {
        if (s.role == Role::kListen) {
            AllowList allow;
            allow.add(s.allow);
            // One warning per refused sender; the element goes on listening.
            const auto warn = [self](const std::string& line) {
                GST_ELEMENT_WARNING(self, RESOURCE, READ, ("%s", line.c_str()), (nullptr));
            };
            st->door.emplace(Door::listen(Endpoint{s.host, static_cast<std::uint16_t>(s.port)}, allow, warn,
                                          pending_limits(s)));
            if (!s.host_b.empty()) {
                st->door_b.emplace(Door::listen(Endpoint{s.host_b, static_cast<std::uint16_t>(s.path_b_port())}, allow,
                                                warn, pending_limits(s)));
            }
            GST_INFO_OBJECT(self, "listening on %s%s%s", st->door->describe().c_str(), st->door_b ? " and " : "",
                            st->door_b ? st->door_b->describe().c_str() : "");
        } else if (s.host.empty()) {
            throw UserError("role=connect needs the sender's address: set the host property");
        } else {
            st->door.emplace(Door::dial(Endpoint{s.host, static_cast<std::uint16_t>(s.port)}));
            if (!s.host_b.empty()) {
                st->door_b.emplace(Door::dial(Endpoint{s.host_b, static_cast<std::uint16_t>(s.path_b_port())}));
            }
        }
    } catch (const std::exception& e) {
        GST_ELEMENT_ERROR(self, RESOURCE, OPEN_READ,
                          ("Could not listen for an RDMA sender on %s:%u", s.host.empty() ? "*" : s.host.c_str(),
                           s.port),
                          ("%s", e.what()));
        return FALSE;
    }
    self->m.ticker.start(GST_ELEMENT(self), std::chrono::milliseconds(s.stats_interval_ms), published_stats);
    GST_OBJECT_LOCK(self); // get_caps looks at the state from other threads
    self->m.state = std::move(st);
    GST_OBJECT_UNLOCK(self);
    return TRUE;
}

static gboolean gst_rdma_src_stop(GstBaseSrc* bsrc) {
    auto* self = GST_RDMA_SRC(bsrc);
    self->m.ticker.stop();
    GST_OBJECT_LOCK(self);
    std::unique_ptr<SrcState> st = std::move(self->m.state); // leaves it empty
    GST_OBJECT_UNLOCK(self);
    if (st) {
        if (st->receiver != nullptr && !st->ended) {
            // Stopped before the sender ended the stream (num-buffers, a
            // pipeline that had what it wanted): the sender ends its stream
            // as a success instead of finding us gone. Buffers still
            // downstream keep the ring's memory until they go.
            GST_INFO_OBJECT(self, "leaving after %" G_GUINT64_FORMAT " frames", st->counters.frames);
            st->receiver->leave();
        }
        if (st->caps != nullptr) {
            gst_caps_unref(st->caps);
        }
        if (st->announced_caps != nullptr) {
            gst_caps_unref(st->announced_caps);
        }
    }
    return TRUE;
}

static GstCaps* gst_rdma_src_get_caps(GstBaseSrc* bsrc, GstCaps* filter) {
    auto* self = GST_RDMA_SRC(bsrc);
    GstCaps* caps = nullptr;
    GST_OBJECT_LOCK(self);
    if (self->m.state != nullptr) {
        GstCaps* known = self->m.state->caps != nullptr ? self->m.state->caps : self->m.state->announced_caps;
        if (known != nullptr) caps = gst_caps_ref(known);
    }
    GST_OBJECT_UNLOCK(self);
    if (caps == nullptr) {
        caps = gst_pad_get_pad_template_caps(GST_BASE_SRC_PAD(bsrc)); // ANY until the sender says
    }
    if (filter != nullptr) {
        GstCaps* both = gst_caps_intersect_full(filter, caps, GST_CAPS_INTERSECT_FIRST);
        gst_caps_unref(caps);
        caps = both;
    }
    return caps;
}

// Nothing to choose: the caps come from the sender with the first frame.
static gboolean gst_rdma_src_negotiate(GstBaseSrc*) {
    return TRUE;
}

static gboolean gst_rdma_src_query(GstBaseSrc* bsrc, GstQuery* query) {
    auto* self = GST_RDMA_SRC(bsrc);
    if (GST_QUERY_TYPE(query) == GST_QUERY_LATENCY) {
        // A frame is ours one frame period after the sender's source made it
        // (at least); downstream may hold up to the ring's slots of them.
        GST_OBJECT_LOCK(self);
        const GstClockTime frame = self->m.frame_duration;
        const guint slots = self->m.settings.slots;
        GST_OBJECT_UNLOCK(self);
        const GstClockTime min = GST_CLOCK_TIME_IS_VALID(frame) ? frame : 0;
        const GstClockTime max = GST_CLOCK_TIME_IS_VALID(frame) ? frame * slots : GST_CLOCK_TIME_NONE;
        GST_DEBUG_OBJECT(self, "latency: min %" GST_TIME_FORMAT " max %" GST_TIME_FORMAT, GST_TIME_ARGS(min),
                         GST_TIME_ARGS(max));
        gst_query_set_latency(query, TRUE, min, max);
        return TRUE;
    }
    return GST_BASE_SRC_CLASS(gst_rdma_src_parent_class)->query(bsrc, query);
}

// rdmasrc pushes only its own buffers (ring slots, or copies from its own
// pool), so it takes no pool from the allocation query; what it reads there
// is how many buffers downstream says it needs to hold (the pools' minimum).
// The query runs once the sender's caps are known (adopt_format asks for
// it), but the ring was made before that, when the sender connected: its
// slot count is announced then and stays, so downstream's needs cannot size
// it. copy-threshold keeps the stream going when they exceed what the ring
// can lend; the log says which slots= would lend every frame.
static gboolean gst_rdma_src_decide_allocation(GstBaseSrc* bsrc, GstQuery* query) {
    auto* self = GST_RDMA_SRC(bsrc);
    guint need = 0;
    for (guint i = 0; i < gst_query_get_n_allocation_pools(query); ++i) {
        guint min = 0;
        gst_query_parse_nth_allocation_pool(query, i, nullptr, nullptr, &min, nullptr);
        need = std::max(need, min);
    }
    // Out of the query, so basesrc activates none of them for nothing.
    while (gst_query_get_n_allocation_pools(query) > 0) {
        gst_query_remove_nth_allocation_pool(query, 0);
    }
    SrcState* st = self->m.state.get(); // the streaming thread's, as this query is
    if (st == nullptr || st->receiver == nullptr) {
        return TRUE; // before the sender: no caps yet, nothing to compare
    }
    st->downstream_min = need;
    const guint slots = st->receiver->slots();
    const guint keep = st->settings.copy_threshold;
    const guint lendable = FrameCopies::lendable(slots, keep);
    if (need > lendable) {
        GST_WARNING_OBJECT(self,
                           "downstream asks to hold %u buffers; the ring's %u slots (sized when the sender "
                           "connected) lend it %u with copy-threshold=%u: frames it holds beyond that are copied. "
                           "slots=%u would lend them all",
                           need, slots, lendable, keep, need + keep);
    } else {
        GST_DEBUG_OBJECT(self, "downstream asks to hold %u buffers; the ring lends up to %u", need, lendable);
    }
    return TRUE;
}

// GStreamer's unlock contract: a create() blocked in a wait returns at once
// (the flag first, then the wake, so the woken create() sees the flag).
static gboolean gst_rdma_src_unlock(GstBaseSrc* bsrc) {
    auto* self = GST_RDMA_SRC(bsrc);
    self->m.flushing.store(true);
    self->m.waker->wake();
    return TRUE;
}

static gboolean gst_rdma_src_unlock_stop(GstBaseSrc* bsrc) {
    auto* self = GST_RDMA_SRC(bsrc);
    self->m.flushing.store(false);
    return TRUE; // a wake left over only costs create() one more look
}

static SrcSettings& settings_of(GObject* object) {
    return GST_RDMA_SRC(object)->m.settings;
}

static void gst_rdma_src_finalize(GObject* object) {
    auto* self = GST_RDMA_SRC(object);
    self->m.~SrcMembers();
    G_OBJECT_CLASS(gst_rdma_src_parent_class)->finalize(object);
}

static void gst_rdma_src_class_init(GstRdmaSrcClass* klass) {
    auto* gobject_class = G_OBJECT_CLASS(klass);
    auto* element_class = GST_ELEMENT_CLASS(klass);
    auto* basesrc_class = GST_BASE_SRC_CLASS(klass);
    GST_DEBUG_CATEGORY_INIT(gst_rdma_src_debug, "rdmasrc", 0, "RDMA frame receiver");
    // Caps strings may name types libgstvideo registers lazily (jpegenc's
    // caps carry a GstVideoMultiviewFlagsSet): register them before any
    // gst_caps_from_string, or parsing the sender's caps fails.
    g_type_ensure(gst_video_multiview_flagset_get_type());

    gobject_class->set_property = set_property_vfunc<settings_of, kSrcFields>;
    gobject_class->get_property =
        get_property_vfunc<settings_of, kSrcFields, published_stats>;
    gobject_class->finalize = gst_rdma_src_finalize;

    install_shared_properties(
        gobject_class,
        {.host = "role=listen: the local address to listen on (empty: every address). role=connect: the sender's "
                 "address (name or IP on its RDMA device)",
         .role = "Who opens the connection: listen (default, like udpsrc) waits for the sender to dial in; "
                 "connect dials a sender listening at host:port",
         .connect_timeout = "role=connect: milliseconds to keep retrying until the sender listens. role=listen "
                            "waits for a sender as long as the element runs",
         .timeout = "Milliseconds without a frame or a keepalive (a living sender sends one every second) before "
                    "the sender is declared stuck and the element errors out",
         .allow = "role=listen: senders that may connect, ADDR or ADDR/PREFIX (IPv4 or IPv6), separated by commas; "
                  "others are refused at their connect request. Empty: everyone",
         .stats = "Counters of the running stream: frames, bytes, drops (frames the sender's live policy dropped, "
                  "seen as gaps in its frame numbers), format-changes, copies (frames copied out of their slot "
                  "because downstream held too many: copy-threshold)"},
        SrcSettings{});
    const auto rw = static_cast<GParamFlags>(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);
    g_object_class_install_property(
        gobject_class, PROP_SLOTS,
        g_param_spec_uint("slots", "Slots",
                          "Frames the receive ring holds: how far the sender may run ahead, and how many buffers "
                          "downstream may keep before the sender waits (lossless) or drops (live)",
                          1, 256, kSrcDefaultSlots, rw));
    g_object_class_install_property(
        gobject_class, PROP_SLOT_SIZE,
        g_param_spec_uint("slot-size", "Slot size",
                          "Bytes per ring slot, 64-byte header included. The ring grows on its own when the sender "
                          "announces larger frames; size it for the stream to avoid that pause",
                          128, 1u << 30, kSrcDefaultSlotSize, rw));
    g_object_class_install_property(
        gobject_class, PROP_MAX_FRAME_BYTES,
        g_param_spec_uint("max-frame-bytes", "Maximum frame bytes",
                          "The largest frame (payload bytes) a sender may announce; a stream format above it is "
                          "refused with an element error naming this property. rdmasrc decides what it pins, "
                          "whatever the locked-memory limit allows",
                          1, (1u << 30) - 64, kSrcDefaultMaxFrameBytes, rw));
    g_object_class_install_property(
        gobject_class, PROP_MAX_RING_BYTES,
        g_param_spec_uint64("max-ring-bytes", "Maximum ring bytes",
                            "The most memory the receive ring (slots x slot size) may pin when a sender's frames "
                            "make it grow; a stream format needing more is refused with an element error naming "
                            "this property. slots x slot-size must fit it too",
                            1, G_MAXUINT64, kSrcDefaultMaxRingBytes, rw));
    g_object_class_install_property(
        gobject_class, PROP_MEMORY_WINDOWS,
        g_param_spec_boolean("memory-windows", "Memory windows",
                             "A type 2 memory window per ring slot, bound only while the sender holds the slot's "
                             "credit: the NIC refuses a sender's write into a frame pushed downstream. false: the "
                             "ring is one remote-writable region (such a write is refused only after it landed). "
                             "A device without type 2 windows falls back to that, with a warning. Off by default: "
                             "on Soft-RoCE a lossy wire stalls a stream with windows (docs/security.md)",
                             FALSE, rw));
    g_object_class_install_property(
        gobject_class, PROP_HANDSHAKE_TIMEOUT,
        g_param_spec_uint("handshake-timeout", "Handshake timeout",
                          "role=listen: milliseconds a new sender has to prove its key (key-file), and then to send its "
                          "first frame; one that does not (silent, a bad format) is refused with a warning and the "
                          "next one served",
                          1, G_MAXUINT, kSrcDefaultHandshakeTimeoutMs, rw));
    g_object_class_install_property(
        gobject_class, PROP_COPY_THRESHOLD,
        g_param_spec_uint("copy-threshold", "Copy threshold",
                          "Free slots to keep (as v4l2src does with its driver's queue): a frame whose slot, lent "
                          "downstream, would leave fewer of the ring's slots to the sender is copied into a buffer "
                          "of rdmasrc's own pool instead, and its slot goes back at once. An element that holds "
                          "buffers (filesink batching small ones, a queue filling up, an appsink pulled slowly) "
                          "then costs a copy per frame it holds beyond the ring (stats: copies) instead of "
                          "stopping the stream. At most slots - 1 take effect; 0: never copy (downstream holding "
                          "every slot stalls the sender)",
                          0, G_MAXUINT, kSrcDefaultCopyThreshold, rw));

    gst_element_class_add_static_pad_template(element_class, &src_template);
    gst_element_class_add_static_pad_template(element_class, &src_flow_template);
    gst_element_class_set_static_metadata(element_class, "RDMA source", "Source/Network",
                                          "Receives frames over RDMA and pushes them without copying",
                                          "rdmastream developers");

    basesrc_class->start = gst_rdma_src_start;
    basesrc_class->stop = gst_rdma_src_stop;
    basesrc_class->get_caps = gst_rdma_src_get_caps;
    basesrc_class->negotiate = gst_rdma_src_negotiate;
    basesrc_class->query = gst_rdma_src_query;
    basesrc_class->decide_allocation = gst_rdma_src_decide_allocation;
    basesrc_class->unlock = gst_rdma_src_unlock;
    basesrc_class->unlock_stop = gst_rdma_src_unlock_stop;
    GST_PUSH_SRC_CLASS(klass)->create = gst_rdma_src_create;
}

static void gst_rdma_src_init(GstRdmaSrc* self) {
    new (&self->m) SrcMembers(); // GObject zeroed the memory; the members construct here
    auto* bsrc = GST_BASE_SRC(self);
    gst_base_src_set_live(bsrc, TRUE);
    gst_base_src_set_format(bsrc, GST_FORMAT_TIME);
    // The sender's timestamps are kept; do-timestamp stays off.
}

