// SPDX-License-Identifier: LGPL-2.1-or-later
// gst-rdma-check: runs one gst-launch style pipeline to its end and proves
// what went through it. The RDMA tests run it on both nodes:
//
//   gst-rdma-check [--digest FILE] [--framemd5 FILE] [--restart-after N]
//                  [--stats ELEMENT] [--expect FIELD=N]... PIPELINE
//
// --digest: a fakesink named "digest" in PIPELINE; one line per buffer
//   (caps when they change; pts, duration, the flags that travel, size,
//   SHA-1 of the bytes) goes to FILE, so a receiver's digest can be diffed
//   with the same pipeline's without RDMA.
// --framemd5: the same fakesink, raw video only; the frame lines of
//   `ffmpeg -f framemd5` (pts and duration in 1/framerate, the packed
//   size, MD5 of the packed planes), to compare with FFmpeg and rdmarecv.
// --restart-after N: after N buffers at the digest sink, the pipeline goes
//   to NULL and back to PLAYING once (a receiver restarting mid-stream).
// --pull-after N [--pull-delay-ms D]: the digest sink is an appsink named
//   "digest" that an application pulls slowly: nothing until N samples
//   wait in it (or the stream ended or failed), then one sample every D ms.
//   The digest lines are the fakesink's, so the two compare.
// --stats: prints the "stats" property of ELEMENT at the end;
// --expect copies=0: fails unless that stats field has that value;
// --expect-at-most credit-waits=30: unless it is at most that;
// --expect-at-least copies=1: unless it is at least that.
// --stats-messages N: ELEMENT (stats-interval set) must post at least N
//   element messages with its stats while it runs, their frames never
//   falling and rising from the first to the last.
// --sink-uri URI: PIPELINE is the upstream part, ending in an element (not
//   caps); the sink is made from URI (gst_element_make_from_uri, as an
//   application would), named "rdma" and linked to it.
// The digest fakesink may also be playbin's video-sink
//   (playbin uri=... video-sink="fakesink name=digest").
// Exit 0 only at EOS with every expectation met.
#include <gst/app/gstappsink.h>
#include <gst/gst.h>
#include <gst/video/video.h>

#include <chrono>
#include <thread>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace {

struct Digest {
    FILE* out = nullptr;
    FILE* framemd5 = nullptr;
    std::string caps;
    GstVideoInfo info{};
    guint64 buffers = 0;
    guint64 restart_after = 0; // 0: never
    GstElement* pipeline = nullptr;
};

// One `ffmpeg -f framemd5` frame line: MD5 over each plane's visible rows,
// packed (no stride padding), timestamps in the encoder's time base
// (1/framerate, 1/25 when unknown), as FFmpeg and rdmarecv write them.
void write_framemd5(const Digest& d, GstBuffer* buf) {
    GstVideoFrame frame;
    GstVideoInfo info = d.info;
    if (!gst_video_frame_map(&frame, &info, buf, GST_MAP_READ)) {
        std::fprintf(d.framemd5, "unmappable frame\n");
        return;
    }
    GChecksum* md5 = g_checksum_new(G_CHECKSUM_MD5);
    gsize size = 0;
    const GstVideoFormatInfo* f = info.finfo;
    for (guint p = 0; p < GST_VIDEO_FRAME_N_PLANES(&frame); ++p) {
        guint comp = 0; // the first component stored in this plane gives its row length
        while (GST_VIDEO_FORMAT_INFO_PLANE(f, comp) != p) {
            ++comp;
        }
        const auto row = static_cast<gsize>(GST_VIDEO_FRAME_COMP_WIDTH(&frame, comp)) *
                         static_cast<gsize>(GST_VIDEO_FRAME_COMP_PSTRIDE(&frame, comp));
        const auto* data = static_cast<const guchar*>(GST_VIDEO_FRAME_PLANE_DATA(&frame, p));
        for (gint r = 0; r < GST_VIDEO_FRAME_COMP_HEIGHT(&frame, comp); ++r) {
            g_checksum_update(md5, data + static_cast<gsize>(r) * GST_VIDEO_FRAME_PLANE_STRIDE(&frame, p), row);
            size += row;
        }
    }
    gst_video_frame_unmap(&frame);
    const gint num = info.fps_n > 0 ? info.fps_n : 25, den = info.fps_n > 0 ? info.fps_d : 1;
    const auto in_tb = [&](GstClockTime t) {
        return GST_CLOCK_TIME_IS_VALID(t) ? gst_util_uint64_scale_round(t, static_cast<guint64>(num),
                                                                        static_cast<guint64>(den) * GST_SECOND)
                                          : 0;
    };
    const guint64 pts = in_tb(GST_BUFFER_PTS(buf));
    std::fprintf(d.framemd5, "0, %10" G_GUINT64_FORMAT ", %10" G_GUINT64_FORMAT ", %8" G_GUINT64_FORMAT ", %8zu, %s\n",
                 pts, pts, in_tb(GST_BUFFER_DURATION(buf)), size, g_checksum_get_string(md5));
    g_checksum_free(md5);
}

constexpr guint kTravellingFlags =
    GST_BUFFER_FLAG_DISCONT | GST_BUFFER_FLAG_DELTA_UNIT | GST_BUFFER_FLAG_HEADER | GST_BUFFER_FLAG_CORRUPTED;

// One buffer's digest lines, in `current` caps.
void digest_buffer(Digest* d, GstBuffer* buf, GstCaps* current) {
    gchar* caps = gst_caps_to_string(current);
    if (d->caps != caps) {
        d->caps = caps;
        if (d->out != nullptr) {
            std::fprintf(d->out, "caps %s\n", caps);
        }
        if (d->framemd5 != nullptr && !gst_video_info_from_caps(&d->info, current)) {
            std::fprintf(d->framemd5, "not raw video: %s\n", caps);
        }
    }
    g_free(caps);
    if (++d->buffers == d->restart_after) {
        // The restart happens on the main thread: a streaming thread cannot stop its own pipeline.
        gst_element_post_message(d->pipeline, gst_message_new_application(nullptr, gst_structure_new_empty("restart")));
    }
    if (d->framemd5 != nullptr) {
        write_framemd5(*d, buf);
    }
    if (d->out == nullptr) {
        return;
    }
    GstMapInfo map;
    gst_buffer_map(buf, &map, GST_MAP_READ);
    gchar* sum = g_compute_checksum_for_data(G_CHECKSUM_SHA1, map.data, map.size);
    std::fprintf(d->out, "pts %" G_GUINT64_FORMAT " duration %" G_GUINT64_FORMAT " flags 0x%x size %zu sha1 %s\n",
                 GST_BUFFER_PTS(buf), GST_BUFFER_DURATION(buf), GST_BUFFER_FLAGS(buf) & kTravellingFlags, map.size,
                 sum);
    g_free(sum);
    gst_buffer_unmap(buf, &map);
}

// fakesink's handoff: nothing keeps the buffer afterwards (no last sample).
void on_handoff(GstElement*, GstBuffer* buf, GstPad* pad, gpointer data) {
    GstCaps* current = gst_pad_get_current_caps(pad);
    digest_buffer(static_cast<Digest*>(data), buf, current);
    gst_caps_unref(current);
}

// --pull-after: the application's side of an appsink it pulls slowly. The
// streaming thread counts samples in; an error or EOS on the bus, or the
// Nth sample, wakes the application, which then pulls one per `delay`.
struct SlowPuller {
    GMutex lock;
    GCond cond;
    guint64 queued = 0;
    bool ended = false; // an error or EOS was posted
};

GstFlowReturn on_new_sample(GstAppSink*, gpointer data) {
    auto* p = static_cast<SlowPuller*>(data);
    g_mutex_lock(&p->lock);
    ++p->queued;
    g_cond_signal(&p->cond);
    g_mutex_unlock(&p->lock);
    return GST_FLOW_OK;
}

void end_wait(SlowPuller* p) {
    g_mutex_lock(&p->lock);
    p->ended = true;
    g_cond_signal(&p->cond);
    g_mutex_unlock(&p->lock);
}

GstBusSyncReply on_bus_message(GstBus*, GstMessage* m, gpointer data) {
    if (GST_MESSAGE_TYPE(m) == GST_MESSAGE_ERROR) {
        end_wait(static_cast<SlowPuller*>(data));
    }
    return GST_BUS_PASS; // the main loop below still reads it
}

// EOS as it reaches the appsink (its EOS message waits for the last pull).
GstPadProbeReturn on_eos(GstPad*, GstPadProbeInfo* info, gpointer data) {
    if (GST_EVENT_TYPE(GST_PAD_PROBE_INFO_EVENT(info)) == GST_EVENT_EOS) {
        end_wait(static_cast<SlowPuller*>(data));
    }
    return GST_PAD_PROBE_OK;
}

// Waits for `after` samples (or the end), then pulls every sample to EOS,
// one per `delay`, digesting each. An error ends the pulling: the caller
// finds it on the bus.
void pull_slowly(GstAppSink* sink, SlowPuller& p, Digest& d, guint64 after, std::chrono::milliseconds delay) {
    g_mutex_lock(&p.lock);
    while (p.queued < after && !p.ended) {
        g_cond_wait(&p.cond, &p.lock);
    }
    std::printf("gst-rdma-check: pulling from the appsink with %" G_GUINT64_FORMAT " samples waiting\n", p.queued);
    std::fflush(stdout);
    g_mutex_unlock(&p.lock);
    for (;;) {
        // A bounded wait, so an error (no EOS follows it) ends the loop.
        GstSample* sample = gst_app_sink_try_pull_sample(sink, GST_SECOND / 10);
        if (sample == nullptr) {
            if (gst_app_sink_is_eos(sink)) return;
            g_mutex_lock(&p.lock);
            const bool ended = p.ended;
            g_mutex_unlock(&p.lock);
            if (ended) return;
            continue;
        }
        std::this_thread::sleep_for(delay); // the application's work on the sample: what makes it slow
        digest_buffer(&d, gst_sample_get_buffer(sample), gst_sample_get_caps(sample));
        gst_sample_unref(sample);
    }
}

// The fakesink named "digest": in the pipeline, or playbin's video-sink.
GstElement* find_digest(GstElement* pipeline) {
    if (GstElement* sink = gst_bin_get_by_name(GST_BIN(pipeline), "digest")) {
        return sink;
    }
    if (g_object_class_find_property(G_OBJECT_GET_CLASS(pipeline), "video-sink") == nullptr) {
        return nullptr;
    }
    GstElement* sink = nullptr;
    g_object_get(pipeline, "video-sink", &sink, nullptr);
    if (sink != nullptr && std::strcmp(GST_OBJECT_NAME(sink), "digest") != 0) {
        gst_object_unref(sink);
        sink = nullptr;
    }
    return sink;
}

// --sink-uri: UPSTREAM ! (the sink gst_element_make_from_uri makes).
GstElement* pipeline_to_uri(const std::string& upstream, const std::string& uri) {
    GError* err = nullptr;
    GstElement* sink = gst_element_make_from_uri(GST_URI_SINK, uri.c_str(), "rdma", &err);
    if (sink == nullptr) {
        std::fprintf(stderr, "gst-rdma-check: no sink for %s: %s\n", uri.c_str(), err != nullptr ? err->message : "?");
        return nullptr;
    }
    GstElement* bin = gst_parse_bin_from_description(upstream.c_str(), TRUE, &err);
    if (bin == nullptr || err != nullptr) {
        std::fprintf(stderr, "gst-rdma-check: bad pipeline: %s\n", err != nullptr ? err->message : "?");
        return nullptr;
    }
    GstElement* pipeline = gst_pipeline_new(nullptr);
    gst_bin_add_many(GST_BIN(pipeline), bin, sink, nullptr);
    if (!gst_element_link(bin, sink)) {
        std::fprintf(stderr, "gst-rdma-check: cannot link the pipeline to %s\n", uri.c_str());
        return nullptr;
    }
    gchar* made = gst_uri_handler_get_uri(GST_URI_HANDLER(sink));
    std::printf("gst-rdma-check: %s from %s (its URI now: %s)\n", GST_OBJECT_NAME(gst_element_get_factory(sink)),
                uri.c_str(), made != nullptr ? made : "none");
    g_free(made);
    return pipeline;
}

// --stats-messages: the element messages ELEMENT posts with its stats.
struct StatsMessages {
    std::string element;
    guint64 count = 0;
    guint64 first = 0, last = 0;
    bool fell = false;
    void note(GstMessage* m) {
        const GstStructure* s = gst_message_get_structure(m);
        guint64 frames = 0;
        if (element.empty() || std::strcmp(GST_OBJECT_NAME(GST_MESSAGE_SRC(m)), element.c_str()) != 0 ||
            s == nullptr || !g_str_has_suffix(gst_structure_get_name(s), "Stats") ||
            !gst_structure_get_uint64(s, "frames", &frames)) {
            return;
        }
        if (count == 0) first = frames;
        fell = fell || (count > 0 && frames < last);
        last = frames;
        ++count;
    }
};

// The next EOS, error or application message; element messages on the way are noted.
GstMessage* pop_end(GstBus* bus, StatsMessages& stats) {
    const auto wanted = static_cast<GstMessageType>(GST_MESSAGE_EOS | GST_MESSAGE_ERROR | GST_MESSAGE_APPLICATION |
                                                    GST_MESSAGE_ELEMENT);
    for (;;) {
        GstMessage* msg = gst_bus_timed_pop_filtered(bus, GST_CLOCK_TIME_NONE, wanted);
        if (GST_MESSAGE_TYPE(msg) != GST_MESSAGE_ELEMENT) {
            return msg;
        }
        stats.note(msg);
        // rdmasrc's clock anchor: printed, for the tests to read.
        if (const GstStructure* s = gst_message_get_structure(msg);
            s != nullptr && g_str_has_suffix(gst_structure_get_name(s), "Clock")) {
            gchar* text = gst_structure_to_string(s);
            std::printf("gst-rdma-check: %s: %s\n", GST_OBJECT_NAME(GST_MESSAGE_SRC(msg)), text);
            std::fflush(stdout);
            g_free(text);
        }
        gst_message_unref(msg);
    }
}

int usage() {
    std::fprintf(stderr, "usage: gst-rdma-check [--digest FILE] [--framemd5 FILE] [--restart-after N] "
                         "[--pull-after N [--pull-delay-ms D]] [--stats ELEMENT [--stats-messages N]] [--sink-uri URI] "
                         "[--expect FIELD=N]... "
                         "[--expect-at-most FIELD=N]... [--expect-at-least FIELD=N]... PIPELINE\n");
    return 2;
}

} // namespace

int main(int argc, char** argv) {
    gst_init(&argc, &argv);
    std::string digest_file, framemd5_file, stats_name, description, sink_uri;
    guint64 restart_after = 0, pull_after = 0, pull_delay_ms = 0, stats_messages = 0;
    enum class Bound { kExactly, kAtMost, kAtLeast };
    struct Expect {
        std::string field;
        guint64 value = 0;
        Bound bound = Bound::kExactly;
    };
    std::vector<Expect> expects;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--digest" && i + 1 < argc) {
            digest_file = argv[++i];
        } else if (a == "--framemd5" && i + 1 < argc) {
            framemd5_file = argv[++i];
        } else if (a == "--restart-after" && i + 1 < argc) {
            restart_after = std::strtoull(argv[++i], nullptr, 10);
        } else if (a == "--pull-after" && i + 1 < argc) {
            pull_after = std::strtoull(argv[++i], nullptr, 10);
        } else if (a == "--pull-delay-ms" && i + 1 < argc) {
            pull_delay_ms = std::strtoull(argv[++i], nullptr, 10);
        } else if (a == "--stats" && i + 1 < argc) {
            stats_name = argv[++i];
        } else if (a == "--stats-messages" && i + 1 < argc) {
            stats_messages = std::strtoull(argv[++i], nullptr, 10);
        } else if (a == "--sink-uri" && i + 1 < argc) {
            sink_uri = argv[++i];
        } else if ((a == "--expect" || a == "--expect-at-most" || a == "--expect-at-least") && i + 1 < argc) {
            const std::string e = argv[++i];
            const auto eq = e.find('=');
            if (eq == std::string::npos) {
                return usage();
            }
            const Bound bound = a == "--expect" ? Bound::kExactly : a == "--expect-at-most" ? Bound::kAtMost : Bound::kAtLeast;
            expects.push_back({e.substr(0, eq), std::strtoull(e.c_str() + eq + 1, nullptr, 10), bound});
        } else if (description.empty()) {
            description = a;
        } else {
            return usage();
        }
    }
    if (description.empty()) {
        return usage();
    }
    GError* err = nullptr;
    GstElement* pipeline = nullptr;
    if (!sink_uri.empty()) {
        pipeline = pipeline_to_uri(description, sink_uri);
    } else {
        pipeline = gst_parse_launch(description.c_str(), &err);
        if (err != nullptr) {
            std::fprintf(stderr, "gst-rdma-check: bad pipeline: %s\n", err->message);
            return 2;
        }
    }
    if (pipeline == nullptr) {
        return 2;
    }
    StatsMessages stats_seen;
    if (stats_messages > 0) {
        stats_seen.element = stats_name;
    }
    Digest digest;
    digest.pipeline = pipeline;
    digest.restart_after = restart_after;
    GstElement* appsink = nullptr; // --pull-after's
    SlowPuller puller;
    g_mutex_init(&puller.lock);
    g_cond_init(&puller.cond);
    if (pull_after > 0) {
        GstElement* sink = find_digest(pipeline);
        if (sink == nullptr || !GST_IS_APP_SINK(sink) || digest_file.empty() ||
            (digest.out = std::fopen(digest_file.c_str(), "w")) == nullptr) {
            std::fprintf(stderr, "gst-rdma-check: --pull-after needs --digest FILE and an appsink named digest\n");
            return 2;
        }
        // Unbounded, no dropping, not synchronised: every frame waits in it
        // for the slow application, as it would in one that falls behind.
        g_object_set(sink, "sync", FALSE, "max-buffers", 0u, "drop", FALSE, nullptr);
        GstAppSinkCallbacks callbacks{};
        callbacks.new_sample = on_new_sample;
        gst_app_sink_set_callbacks(GST_APP_SINK(sink), &callbacks, &puller, nullptr);
        GstPad* pad = gst_element_get_static_pad(sink, "sink");
        gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM, on_eos, &puller, nullptr);
        gst_object_unref(pad);
        appsink = sink;
    } else if (!digest_file.empty() || !framemd5_file.empty() || restart_after > 0) {
        GstElement* sink = find_digest(pipeline);
        if (!digest_file.empty()) {
            digest.out = std::fopen(digest_file.c_str(), "w");
        }
        if (!framemd5_file.empty()) {
            digest.framemd5 = std::fopen(framemd5_file.c_str(), "w");
        }
        if (sink == nullptr || (!digest_file.empty() && digest.out == nullptr) ||
            (!framemd5_file.empty() && digest.framemd5 == nullptr)) {
            std::fprintf(stderr, "gst-rdma-check: --digest, --framemd5 and --restart-after need a fakesink named "
                                 "digest (and a writable file)\n");
            return 2;
        }
        // No last-sample: a sink keeping the last buffer keeps its rdmasrc
        // ring slot, and the sender's end of stream waits for every slot.
        g_object_set(sink, "signal-handoffs", TRUE, "sync", FALSE, "enable-last-sample", FALSE, nullptr);
        g_signal_connect(sink, "handoff", G_CALLBACK(on_handoff), &digest);
        gst_object_unref(sink);
    }
    GstBus* bus = gst_element_get_bus(pipeline);
    if (appsink != nullptr) {
        gst_bus_set_sync_handler(bus, on_bus_message, &puller, nullptr);
    }
    gst_element_set_state(pipeline, GST_STATE_PLAYING);
    if (appsink != nullptr) {
        pull_slowly(GST_APP_SINK(appsink), puller, digest, pull_after, std::chrono::milliseconds(pull_delay_ms));
        gst_object_unref(appsink);
    }
    GstMessage* msg = pop_end(bus, stats_seen);
    if (GST_MESSAGE_TYPE(msg) == GST_MESSAGE_APPLICATION) { // --restart-after
        gst_message_unref(msg);
        std::printf("gst-rdma-check: restarting after %" G_GUINT64_FORMAT " buffers\n", restart_after);
        std::fflush(stdout);
        gst_element_set_state(pipeline, GST_STATE_NULL);
        gst_element_set_state(pipeline, GST_STATE_PLAYING);
        msg = pop_end(bus, stats_seen);
    }
    int rc = 0;
    if (GST_MESSAGE_TYPE(msg) == GST_MESSAGE_ERROR) {
        GError* e = nullptr;
        gchar* dbg = nullptr;
        gst_message_parse_error(msg, &e, &dbg);
        // One line, so tests can match it: the debug text's first line is
        // only the source location; the cause comes after it.
        const char* cause = dbg != nullptr ? dbg : "";
        if (const char* nl = std::strchr(cause, '\n')) {
            cause = nl + 1;
        }
        std::fprintf(stderr, "gst-rdma-check: error from %s: %s: %s\n", GST_OBJECT_NAME(GST_MESSAGE_SRC(msg)),
                     e->message, cause);
        g_error_free(e);
        g_free(dbg);
        rc = 1;
    }
    gst_message_unref(msg);
    if (!stats_name.empty()) {
        GstElement* el = gst_bin_get_by_name(GST_BIN(pipeline), stats_name.c_str());
        GstStructure* stats = nullptr;
        if (el == nullptr) {
            std::fprintf(stderr, "gst-rdma-check: no element named %s\n", stats_name.c_str());
            return 2;
        }
        g_object_get(el, "stats", &stats, nullptr);
        gchar* text = gst_structure_to_string(stats);
        std::printf("stats %s\n", text);
        g_free(text);
        for (const Expect& e : expects) {
            guint64 got = 0;
            const bool has = gst_structure_get_uint64(stats, e.field.c_str(), &got);
            const bool ok = e.bound == Bound::kExactly  ? got == e.value
                            : e.bound == Bound::kAtMost ? got <= e.value
                                                        : got >= e.value;
            if (!has || !ok) {
                std::fprintf(stderr, "gst-rdma-check: %s is %" G_GUINT64_FORMAT ", expected %s%" G_GUINT64_FORMAT "\n",
                             e.field.c_str(), got,
                             e.bound == Bound::kExactly ? "" : e.bound == Bound::kAtMost ? "at most " : "at least ",
                             e.value);
                rc = 1;
            }
        }
        gst_structure_free(stats);
        gst_object_unref(el);
    }
    if (stats_messages > 0) {
        std::printf("gst-rdma-check: %" G_GUINT64_FORMAT " stats messages from %s, frames %" G_GUINT64_FORMAT
                    " -> %" G_GUINT64_FORMAT "\n",
                    stats_seen.count, stats_name.c_str(), stats_seen.first, stats_seen.last);
        if (stats_seen.count < stats_messages || stats_seen.fell || stats_seen.last <= stats_seen.first) {
            std::fprintf(stderr, "gst-rdma-check: expected at least %" G_GUINT64_FORMAT
                                 " stats messages from %s with frames rising\n",
                         stats_messages, stats_name.c_str());
            rc = 1;
        }
    }
    gst_element_set_state(pipeline, GST_STATE_NULL);
    gst_object_unref(bus);
    gst_object_unref(pipeline);
    if (digest.out != nullptr) {
        std::fclose(digest.out);
    }
    if (digest.framemd5 != nullptr) {
        std::fclose(digest.framemd5);
    }
    if (restart_after > 0) {
        std::printf("gst-rdma-check: %" G_GUINT64_FORMAT " buffers in all\n", digest.buffers);
    }
    return rc;
}
