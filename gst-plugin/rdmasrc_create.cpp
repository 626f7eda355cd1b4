// SPDX-License-Identifier: LGPL-2.1-or-later
// rdmasrc's per-frame path: take the next frame from the ring and push a
// buffer that wraps its slot (no copy); slots downstream has freed go back
// to the sender first. The buffer, its memory and its GstVideoMeta are
// recycled (SlotBuffers, gstslots/): once every slot has carried a frame, no
// allocation, and no syscall but the transport's CQ poll and credit sends.
// (A frame with captions or a timecode is the exception: GStreamer allocates
// the metas that carry them, and their buffer sheds them when it comes home.
// With two paths, each path's counters are asked for into the same vector,
// every 100 ms: its names' strings keep their room.)
// When downstream holds so many slots that fewer than copy-threshold would
// stay with the sender, the frame is copied out instead (FrameCopies, a
// recycled pool too) and its slot goes back at once: the one copy path,
// counted in stats.
#include "rdmasrc.hpp"

#include "rdmakey.hpp"

#include "rdmastream/error.hpp"
#include "rdmastream_gst/frame_buffer.hpp"
#include "rdmastream_gst/video_meta.hpp"

#include <fmt/format.h>

#include <memory>

#define GST_CAT_DEFAULT gst_rdma_src_debug

using namespace rdmastream;
using namespace rdmastream::gst;

namespace {

// Returns the slots downstream freed since the last call to the sender.
void release_freed(SrcState& st) {
    for (const std::uint16_t slot : st.buffers->take_freed_st()) {
        st.receiver->release(slot);
    }
}

// Opens the stream through the Door made in start(): the library dials
// (retrying until connect-timeout) or listens (as long as the element runs),
// holds a listened-for sender on probation until its first frame, and tells
// others "busy" meanwhile; unlock() interrupts every wait through the
// waker. False when flushing; throws on failure.
bool connect(GstRdmaSrc* self, SrcState& st) {
    const SrcSettings& s = st.settings;
    ReceiverConfig c;
    c.slots = s.slots;
    c.slot_size = s.slot_size;
    c.poll_mode = s.poll_mode;
    c.device = s.device;
    c.device_b = s.device_b;
    c.log = [self](const std::string& line) { // each path's loss and return
        GST_ELEMENT_WARNING(self, RESOURCE, READ, ("%s", line.c_str()), (nullptr));
    };
    c.max_frame_bytes = s.max_frame_bytes;
    c.max_ring_bytes = s.max_ring_bytes;
    // A programme's other flows (rdmasend's sound) go out of pads of their
    // own (SrcFlowPads).
    c.waker = self->m.waker;
    c.key = load_key_file(GST_ELEMENT(self), s.key_file);
    c.handshake_timeout = std::chrono::milliseconds(s.handshake_timeout_ms);
    c.memory_windows = s.memory_windows;
    c.warn = [self](const std::string& text) {
        GST_ELEMENT_WARNING(self, RESOURCE, SETTINGS, ("No memory windows on this RDMA device"), ("%s", text.c_str()));
    };
    const bool listening = st.door->listening();
    // role=listen waits for a sender as long as the element runs.
    c.open_timeout = listening ? std::chrono::hours(24) : std::chrono::milliseconds(s.connect_timeout_ms);
    // A sender on probation: its format and first frame checked here, where
    // a refusal (a ProtocolError) is the peer's doing and the element goes on
    // listening, where adopt_format would end the pipeline.
    c.check_first_frame = [](const ReceivedFrame& f, const std::string& peer) {
        FrameLayout::check(*f.format, peer).check_frame(f.header.sequence, f.payload.size());
    };
    std::unique_ptr<Receiver> r;
    while (!r) {
        if (self->m.flushing.load()) {
            return false;
        }
        try {
            // nullptr: woken (unlock, or a stray wake)
            r = st.door_b ? Receiver::open(*st.door, *st.door_b, c) : Receiver::open(*st.door, c);
        } catch (const TimeoutError&) {
            if (!listening) throw;
        }
    }
    GST_INFO_OBJECT(self, "sender connected from %s; ring of %u slots of %u bytes%s", r->peer().c_str(), r->slots(),
                    r->slot_size(), r->huge_pages() ? " (huge pages)" : "");
    auto receiver = std::shared_ptr<Receiver>(std::move(r));
    st.receiver = receiver.get();
    // By slot number: every number a frame may carry (two paths number theirs apart).
    const std::uint32_t slots = receiver->slot_numbers();
    st.buffers.emplace(slots, std::move(receiver), c.waker); // a freed slot wakes create()
    return true;
}

// Outputs `caps` (our reference) from this frame on, unless they are the
// caps already out. False, with an element error posted, when downstream
// refuses them.
bool output_caps(GstRdmaSrc* self, SrcState& st, GstCaps* caps) {
    const bool same = st.caps != nullptr && gst_caps_is_equal(st.caps, caps);
    GST_OBJECT_LOCK(self);
    if (st.caps != nullptr) {
        gst_caps_unref(st.caps);
    }
    st.caps = caps;
    GST_OBJECT_UNLOCK(self);
    // Same caps announced again (e.g. larger encoded frames): nothing to renegotiate.
    if (same) {
        return true;
    }
    if (!gst_base_src_set_caps(GST_BASE_SRC(self), caps)) {
        GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, ("Downstream refused the sender's caps"),
                          ("caps \"%" GST_PTR_FORMAT "\"", static_cast<void*>(caps)));
        return false;
    }
    gst_element_post_message(GST_ELEMENT(self), gst_message_new_latency(GST_OBJECT(self)));
    // The allocation query with these caps, before their first buffer:
    // basesrc sent it only before the sender connected, without caps,
    // which most elements do not answer (decide_allocation reads it).
    if (!gst_base_src_negotiate(GST_BASE_SRC(self))) {
        GST_DEBUG_OBJECT(self, "the allocation query failed; frames go out all the same");
    }
    return true;
}

// Which absolute instant the sender's pts 0 is, when it comes and each
// time it changes (the sender's clock stepped): an element message
// "GstRdmaSrcClock" (clock "realtime" or "TAI", pts0-ns, synchronized),
// so an application can line these timestamps up with other sources on
// the same NTP or PTP time. Two comparisons per frame.
void note_clock(GstRdmaSrc* self, SrcState& st, const ReceivedFrame& frame) {
    const ClockAnchor* c = frame.clock;
    if (c == nullptr || (st.clock && st.clock->pts0_ns == c->pts0_ns && st.clock->clock == c->clock)) return;
    st.clock = *c;
    GST_INFO_OBJECT(self, "the sender's pts 0 is %s %" G_GINT64_FORMAT " ns%s", name(c->clock), c->pts0_ns,
                    c->synchronized ? " (synchronized)" : "");
    gst_element_post_message(GST_ELEMENT(self),
                             gst_message_new_element(GST_OBJECT(self),
                                                     gst_structure_new("GstRdmaSrcClock", "clock", G_TYPE_STRING,
                                                                       name(c->clock), "pts0-ns", G_TYPE_INT64,
                                                                       static_cast<gint64>(c->pts0_ns), "synchronized",
                                                                       G_TYPE_BOOLEAN, c->synchronized, nullptr)));
}

// The first flow's announced caps answer caps queries until its first
// frame sets the caps (get_caps).
void announce_caps(GstRdmaSrc* self, SrcState& st, Receiver& receiver) {
    const StreamFormat* first = receiver.format(0);
    GstCaps* caps = first != nullptr ? gst_caps_from_string(first->caps.c_str()) : nullptr;
    if (caps == nullptr) return; // unreadable: said when its frame comes (adopt_format)
    GST_OBJECT_LOCK(self);
    if (st.announced_caps != nullptr) gst_caps_unref(st.announced_caps);
    st.announced_caps = caps;
    GST_OBJECT_UNLOCK(self);
}

// The sender announced a format: check it once (FrameLayout), then output
// its caps, with the HDR fields of `frame` (its first frame), from this
// frame on. False, with an element error posted, when the format is
// refused or downstream refuses its caps.
bool adopt_format(GstRdmaSrc* self, SrcState& st, const ReceivedFrame& frame, Receiver& receiver) {
    const StreamFormat& format = *frame.format;
    try {
        st.layout.emplace(FrameLayout::check(format, receiver.peer()));
    } catch (const ProtocolError& e) {
        st.layout.reset();
        GST_ELEMENT_ERROR(self, STREAM, FORMAT, ("The sender announced a stream format rdmasrc refuses"),
                          ("%s", e.what()));
        return false;
    }
    GstClockTime duration = GST_CLOCK_TIME_NONE;
    if (st.layout->raw_video() && st.layout->info().fps_n > 0) {
        duration = gst_util_uint64_scale_int(GST_SECOND, st.layout->info().fps_d, st.layout->info().fps_n);
    }
    GST_OBJECT_LOCK(self);
    self->m.frame_duration = duration;
    GST_OBJECT_UNLOCK(self);
    ++st.counters.format_changes;
    GST_INFO_OBJECT(self, "format %u: %s (frames of at least %" G_GUINT64_FORMAT " bytes)", format.id,
                    format.caps.c_str(), st.layout->min_payload());
    return output_caps(self, st, st.side_data.caps_for(st.layout->caps(), frame.side_data));
}

// A frame whose HDR side data differs from the previous frame's (an
// FFmpeg sender's first frames, a new grade): the same format, new caps.
bool adopt_hdr(GstRdmaSrc* self, SrcState& st, const ReceivedFrame& frame) {
    GST_INFO_OBJECT(self, "frame %" G_GUINT64_FORMAT ": new HDR metadata (mastering display, content light)",
                    frame.header.sequence);
    return output_caps(self, st, st.side_data.caps_for(st.layout->caps(), frame.side_data));
}

// Logs when copying starts and stops: the first start at INFO (a holding
// element downstream costs copies from here on), the rest at DEBUG (a
// batching element such as filesink starts and stops with every batch).
void note_copying(GstRdmaSrc* self, SrcState& st, bool copy, std::uint32_t slots, std::uint64_t sequence) {
    if (copy == st.copying) {
        return;
    }
    st.copying = copy;
    const GstDebugLevel level = st.copy_spells == 0 ? GST_LEVEL_INFO : GST_LEVEL_DEBUG;
    if (copy) {
        ++st.copy_spells;
        GST_CAT_LEVEL_LOG(GST_CAT_DEFAULT, level, self,
                          "downstream holds %u of the ring's %u slots (it asked for %u): copying frames out from "
                          "frame %" G_GUINT64_FORMAT " on, so the sender keeps %u (copy-threshold)",
                          st.buffers->lent_st(), slots, st.downstream_min, sequence,
                          slots - FrameCopies::lendable(slots, st.settings.copy_threshold));
    } else {
        GST_CAT_LEVEL_LOG(GST_CAT_DEFAULT, level, self,
                          "downstream let go: frames go out in their slots again from frame %" G_GUINT64_FORMAT
                          " (%" G_GUINT64_FORMAT " copied so far)",
                          sequence, st.copies.count());
    }
}

// The "stats" property's counters from this frame on; with two paths each
// path's too, when due (PathsRefresh) or at the end (`end`).
void publish(GstRdmaSrc* self, SrcState& st, const Receiver& receiver, bool end) {
    const StreamStats& t = receiver.stats();
    st.counters.frames = t.frames;
    st.counters.bytes = t.bytes;
    st.counters.copies = st.copies.count();
    st.counters.max_frame_gap_ms = std::chrono::duration<double, std::milli>(t.max_gap).count();
    if (st.door_b && (st.paths_refresh.due() || end)) receiver.paths(st.counters.paths);
    GST_OBJECT_LOCK(self);
    self->m.published = st.counters;
    GST_OBJECT_UNLOCK(self);
}

// The stream failed with `e`: the element's error, `hint` after the cause.
// (A sender on probation never gets here: the library refused it and
// served the next.)
void gave_up(GstRdmaSrc* self, const std::exception& e, const char* hint) {
    GST_ELEMENT_ERROR(self, RESOURCE, READ, ("Lost the RDMA stream"), ("%s%s", e.what(), hint));
}

} // namespace

GstFlowReturn gst_rdma_src_create(GstPushSrc* src, GstBuffer** buf) {
    auto* self = GST_RDMA_SRC(src);
    SrcState& st = *self->m.state;
    try {
        if (!st.buffers && !connect(self, st)) {
            return GST_FLOW_FLUSHING;
        }
        Receiver& receiver = *st.receiver;
        // One wait, woken by a slot downstream freed (its credit goes back
        // at once), by unlock(), or by the sender; the timeout counts from
        // the sender's last frame or keepalive.
        std::optional<ReceivedFrame> f;
        for (;;) {
            release_freed(st);
            if (self->m.flushing.load()) {
                return GST_FLOW_FLUSHING;
            }
            Receiver::Arrival a = receiver.wait_frame(std::chrono::milliseconds(st.settings.timeout_ms));
            if (a.kind == Receiver::Arrival::kFrame) note_clock(self, st, a.frame);
            if ((a.kind == Receiver::Arrival::kFrame || a.kind == Receiver::Arrival::kEnd) &&
                !st.flow_pads->added()) {
                // The first frame (or an end without one): every flow is
                // announced by now, and a bin waiting for no-more-pads
                // (rdmasrcbin) gets it either way.
                announce_caps(self, st, receiver);
                st.flow_pads->add(receiver, GST_BASE_SRC_PAD(self));
            }
            if (a.kind == Receiver::Arrival::kFrame && a.frame.header.flow != 0) {
                // Another flow's frame goes out of its own pad (a copy; the slot is back).
                if (const GstFlowReturn r = st.flow_pads->push(a.frame, receiver); r != GST_FLOW_OK) {
                    return r;
                }
                continue;
            }
            if (a.kind == Receiver::Arrival::kFrame) {
                f = std::move(a.frame);
                break;
            }
            if (a.kind == Receiver::Arrival::kEnd) {
                break;
            }
        }
        if (!f) {
            st.ended = true;
            publish(self, st, receiver, true);
            st.flow_pads->end();
            GST_INFO_OBJECT(self, "end of stream after %" G_GUINT64_FORMAT " frames", st.counters.frames);
            return GST_FLOW_EOS;
        }
        if (f->format == nullptr) {
            receiver.release(f->slot);
            GST_ELEMENT_ERROR(self, STREAM, FORMAT, ("The sender sent a frame before announcing its format"),
                              ("frame %" G_GUINT64_FORMAT ": without caps there is nothing to push",
                               f->header.sequence));
            return GST_FLOW_ERROR;
        }
        bool negotiated = true;
        if (f->format_changed || !st.layout) {
            negotiated = adopt_format(self, st, *f, receiver);
        } else if (st.side_data.hdr_changed(f->side_data)) { // a byte comparison per frame
            negotiated = adopt_hdr(self, st, *f);
        }
        if (!negotiated) {
            receiver.release(f->slot);
            return GST_FLOW_NOT_NEGOTIATED;
        }
        try {
            st.layout->check_frame(f->header.sequence, f->payload.size()); // one comparison
        } catch (const ProtocolError& e) {
            receiver.release(f->slot);
            GST_ELEMENT_ERROR(self, STREAM, FORMAT, ("The sender sent a frame shorter than its format"),
                              ("%s", e.what()));
            return GST_FLOW_ERROR;
        }

        // Checked: the buffer goes out. Lent (the slot itself) while
        // downstream leaves the sender enough slots, else copied.
        const std::uint32_t slots = receiver.slots();
        const bool copy = FrameCopies::needed(slots, st.buffers->lent_st(), st.settings.copy_threshold);
        note_copying(self, st, copy, slots, f->header.sequence);
        GstBuffer* buffer = nullptr;
        if (copy) {
            buffer = st.copies.copy(f->payload, *st.layout);
            receiver.release(f->slot); // its credit goes back now
        } else {
            buffer = st.buffers->wrap_st(f->slot, f->payload, receiver.max_payload());
            set_video_meta(buffer, *st.layout);
        }
        stamp_frame_buffer(buffer, f->header); // the sender's times (a live source), flags and frame number
        st.side_data.attach(buffer, f->side_data); // captions, timecode: metas (the payload stays where it is)

        // Frame numbers count every frame the sender was offered: a gap is
        // what its live policy dropped.
        if (f->header.sequence > st.next_sequence) {
            st.counters.drops += f->header.sequence - st.next_sequence;
        }
        st.next_sequence = f->header.sequence + 1;
        publish(self, st, receiver, false);
        GST_LOG_OBJECT(self, "frame %" G_GUINT64_FORMAT " in slot %u%s: %zu bytes, pts %" GST_TIME_FORMAT,
                       f->header.sequence, f->slot, copy ? " (copied)" : "", f->payload.size(),
                       GST_TIME_ARGS(GST_BUFFER_PTS(buffer)));
        *buf = buffer;
        return GST_FLOW_OK;
    } catch (const TimeoutError& e) {
        gave_up(self, e, " (raise the timeout property if the sender is only slow)");
        return GST_FLOW_ERROR;
    } catch (const std::exception& e) {
        gave_up(self, e, "");
        return GST_FLOW_ERROR;
    }
}
