// gst-rdma-check: runs one gst-launch style pipeline to its end and proves
// what went through it. The RDMA tests run it on both nodes:
//
//   gst-rdma-check [--digest FILE] [--stats ELEMENT] [--expect FIELD=N]... PIPELINE
//
// --digest: a fakesink named "digest" in PIPELINE; one line per buffer
//   (caps when they change; pts, duration, the flags that travel, size,
//   SHA-1 of the bytes) goes to FILE, so a receiver's digest can be diffed
//   with the same pipeline's without RDMA.
// --stats: prints the "stats" property of ELEMENT at the end;
// --expect copies=0: fails unless that stats field has that value.
// Exit 0 only at EOS with every expectation met.
#include <gst/gst.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

namespace {

struct Digest {
    FILE* out = nullptr;
    std::string caps;
};

constexpr guint kTravellingFlags =
    GST_BUFFER_FLAG_DISCONT | GST_BUFFER_FLAG_DELTA_UNIT | GST_BUFFER_FLAG_HEADER | GST_BUFFER_FLAG_CORRUPTED;

// fakesink's handoff: nothing keeps the buffer afterwards. (appsink would
// keep its preroll buffer, i.e. an rdmasrc ring slot, and the sender's end
// of stream waits for every slot.)
void on_handoff(GstElement*, GstBuffer* buf, GstPad* pad, gpointer data) {
    auto* d = static_cast<Digest*>(data);
    GstCaps* current = gst_pad_get_current_caps(pad);
    gchar* caps = gst_caps_to_string(current);
    gst_caps_unref(current);
    if (d->caps != caps) {
        d->caps = caps;
        std::fprintf(d->out, "caps %s\n", caps);
    }
    g_free(caps);
    GstMapInfo map;
    gst_buffer_map(buf, &map, GST_MAP_READ);
    gchar* sum = g_compute_checksum_for_data(G_CHECKSUM_SHA1, map.data, map.size);
    std::fprintf(d->out, "pts %" G_GUINT64_FORMAT " duration %" G_GUINT64_FORMAT " flags 0x%x size %zu sha1 %s\n",
                 GST_BUFFER_PTS(buf), GST_BUFFER_DURATION(buf), GST_BUFFER_FLAGS(buf) & kTravellingFlags, map.size,
                 sum);
    g_free(sum);
    gst_buffer_unmap(buf, &map);
}

int usage() {
    std::fprintf(stderr, "usage: gst-rdma-check [--digest FILE] [--stats ELEMENT] [--expect FIELD=N]... PIPELINE\n");
    return 2;
}

} // namespace

int main(int argc, char** argv) {
    gst_init(&argc, &argv);
    std::string digest_file, stats_name, description;
    std::vector<std::pair<std::string, guint64>> expects;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--digest" && i + 1 < argc) {
            digest_file = argv[++i];
        } else if (a == "--stats" && i + 1 < argc) {
            stats_name = argv[++i];
        } else if (a == "--expect" && i + 1 < argc) {
            const std::string e = argv[++i];
            const auto eq = e.find('=');
            if (eq == std::string::npos) {
                return usage();
            }
            expects.emplace_back(e.substr(0, eq), std::strtoull(e.c_str() + eq + 1, nullptr, 10));
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
    GstElement* pipeline = gst_parse_launch(description.c_str(), &err);
    if (pipeline == nullptr || err != nullptr) {
        std::fprintf(stderr, "gst-rdma-check: bad pipeline: %s\n", err != nullptr ? err->message : "?");
        return 2;
    }
    Digest digest;
    if (!digest_file.empty()) {
        GstElement* sink = gst_bin_get_by_name(GST_BIN(pipeline), "digest");
        digest.out = std::fopen(digest_file.c_str(), "w");
        if (sink == nullptr || digest.out == nullptr) {
            std::fprintf(stderr, "gst-rdma-check: --digest needs a fakesink named digest and a writable file\n");
            return 2;
        }
        // No last-sample: a sink keeping the last buffer keeps its rdmasrc
        // ring slot, and the sender's end of stream waits for every slot.
        g_object_set(sink, "signal-handoffs", TRUE, "sync", FALSE, "enable-last-sample", FALSE, nullptr);
        g_signal_connect(sink, "handoff", G_CALLBACK(on_handoff), &digest);
        gst_object_unref(sink);
    }
    gst_element_set_state(pipeline, GST_STATE_PLAYING);
    GstBus* bus = gst_element_get_bus(pipeline);
    GstMessage* msg = gst_bus_timed_pop_filtered(bus, GST_CLOCK_TIME_NONE,
                                                 static_cast<GstMessageType>(GST_MESSAGE_EOS | GST_MESSAGE_ERROR));
    int rc = 0;
    if (GST_MESSAGE_TYPE(msg) == GST_MESSAGE_ERROR) {
        GError* e = nullptr;
        gchar* dbg = nullptr;
        gst_message_parse_error(msg, &e, &dbg);
        std::fprintf(stderr, "gst-rdma-check: error from %s: %s (%s)\n", GST_OBJECT_NAME(GST_MESSAGE_SRC(msg)),
                     e->message, dbg != nullptr ? dbg : "");
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
        for (const auto& [field, want] : expects) {
            guint64 got = 0;
            if (!gst_structure_get_uint64(stats, field.c_str(), &got) || got != want) {
                std::fprintf(stderr, "gst-rdma-check: %s is %" G_GUINT64_FORMAT ", expected %" G_GUINT64_FORMAT "\n",
                             field.c_str(), got, want);
                rc = 1;
            }
        }
        gst_structure_free(stats);
        gst_object_unref(el);
    }
    gst_element_set_state(pipeline, GST_STATE_NULL);
    gst_object_unref(bus);
    gst_object_unref(pipeline);
    if (digest.out != nullptr) {
        std::fclose(digest.out);
    }
    return rc;
}
