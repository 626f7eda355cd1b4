// SPDX-License-Identifier: LGPL-2.1-or-later
// side-data-check: per-frame side data through rdmasink and rdmasrc
// (rdma.gst_side_data runs one mode on each node).
//
//   side-data-check send N PIPELINE     (a capsfilter named "caps", an element named "tag")
//   side-data-check receive N PIPELINE  (an element named "tag")
//
// send: the capsfilter's caps get a known mastering-display-info and
//   content-light-level; each buffer entering "tag" gets frame i's CEA-708
//   captions (1 to 3 triplets, bytes made from i) and timecode
//   01:02:03:00 plus i frames at 30 fps.
// receive: each buffer entering "tag" must carry frame i's captions
//   (CEA708_RAW, same bytes) and timecode, and the caps it arrives in the
//   same HDR fields; N buffers, then EOS.
// Exit 0 only at EOS with every check passed; otherwise the first mismatch
// (or missing meta) is printed, naming the frame.
#include <gst/gst.h>
#include <gst/video/video.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr guint kFpsN = 30, kFpsD = 1;
constexpr GstVideoContentLightLevel kLight{1000, 400, {}};

GstVideoMasteringDisplayInfo mastering() {
    GstVideoMasteringDisplayInfo m;
    gst_video_mastering_display_info_init(&m);
    m.display_primaries[0] = {35400, 14600}; // BT.2020 red, green, blue
    m.display_primaries[1] = {8500, 39850};
    m.display_primaries[2] = {6550, 2300};
    m.white_point = {15635, 16450}; // D65
    m.max_display_mastering_luminance = 10000000;
    m.min_display_mastering_luminance = 50;
    return m;
}

// Frame i's cc_data: 1 to 3 triplets, each byte depending on i.
std::vector<guint8> captions(guint64 i) {
    std::vector<guint8> cc;
    for (guint64 k = 0; k <= i % 3; ++k) {
        cc.push_back(static_cast<guint8>(0xfc | (k & 3)));
        cc.push_back(static_cast<guint8>(i & 0x7f));
        cc.push_back(static_cast<guint8>(0x80 | k));
    }
    return cc;
}

// Frame i's timecode: 01:02:03:00 plus i frames.
void timecode(guint64 i, GstVideoTimeCode* tc) {
    gst_video_time_code_init(tc, kFpsN, kFpsD, nullptr, GST_VIDEO_TIME_CODE_FLAGS_NONE, 1, 2, 3, 0, 0);
    gst_video_time_code_add_frames(tc, static_cast<gint64>(i));
}

struct Check {
    guint64 frames = 0;
    guint64 want = 0;
    std::string failure; // the first
    GstCaps* checked_caps = nullptr;
    GstPad* pad = nullptr;

    void fail(const std::string& what) {
        if (failure.empty()) {
            failure = "frame " + std::to_string(frames) + ": " + what;
        }
    }
};

GstPadProbeReturn tag_frame(GstPad*, GstPadProbeInfo* info, gpointer data) {
    auto* c = static_cast<Check*>(data);
    GstBuffer* buf = gst_buffer_make_writable(GST_PAD_PROBE_INFO_BUFFER(info));
    GST_PAD_PROBE_INFO_DATA(info) = buf;
    const std::vector<guint8> cc = captions(c->frames);
    gst_buffer_add_video_caption_meta(buf, GST_VIDEO_CAPTION_TYPE_CEA708_RAW, cc.data(), cc.size());
    GstVideoTimeCode tc;
    timecode(c->frames, &tc);
    gst_buffer_add_video_time_code_meta(buf, &tc);
    gst_video_time_code_clear(&tc);
    ++c->frames;
    return GST_PAD_PROBE_OK;
}

void check_caps(Check* c) {
    GstCaps* caps = gst_pad_get_current_caps(c->pad);
    if (caps == nullptr) {
        c->fail("no caps");
        return;
    }
    if (c->checked_caps != nullptr && gst_caps_is_equal(caps, c->checked_caps)) {
        gst_caps_unref(caps);
        return;
    }
    gst_caps_replace(&c->checked_caps, caps);
    GstVideoMasteringDisplayInfo m;
    const GstVideoMasteringDisplayInfo want = mastering();
    GstVideoContentLightLevel l;
    if (!gst_video_mastering_display_info_from_caps(&m, caps)) {
        c->fail("caps without mastering-display-info");
    } else if (!gst_video_mastering_display_info_is_equal(&m, &want)) {
        gchar* got = gst_video_mastering_display_info_to_string(&m);
        c->fail(std::string("mastering-display-info ") + got);
        g_free(got);
    }
    if (!gst_video_content_light_level_from_caps(&l, caps)) {
        c->fail("caps without content-light-level");
    } else if (!gst_video_content_light_level_is_equal(&l, &kLight)) {
        c->fail("content-light-level " + std::to_string(l.max_content_light_level) + ":" +
                std::to_string(l.max_frame_average_light_level));
    }
    gst_caps_unref(caps);
}

GstPadProbeReturn check_frame(GstPad*, GstPadProbeInfo* info, gpointer data) {
    auto* c = static_cast<Check*>(data);
    GstBuffer* buf = GST_PAD_PROBE_INFO_BUFFER(info);
    check_caps(c);
    const std::vector<guint8> want_cc = captions(c->frames);
    const GstVideoCaptionMeta* cc = gst_buffer_get_video_caption_meta(buf);
    if (cc == nullptr) {
        c->fail("no GstVideoCaptionMeta");
    } else if (cc->caption_type != GST_VIDEO_CAPTION_TYPE_CEA708_RAW) {
        c->fail("caption type " + std::to_string(cc->caption_type) + ", not CEA708_RAW");
    } else if (cc->size != want_cc.size() || std::memcmp(cc->data, want_cc.data(), cc->size) != 0) {
        c->fail("captions of " + std::to_string(cc->size) + " bytes differ from the " +
                std::to_string(want_cc.size()) + " sent");
    }
    GstVideoTimeCode want_tc;
    timecode(c->frames, &want_tc);
    const GstVideoTimeCodeMeta* tc = gst_buffer_get_video_time_code_meta(buf);
    if (tc == nullptr) {
        c->fail("no GstVideoTimeCodeMeta");
    } else if (gst_video_time_code_compare(&tc->tc, &want_tc) != 0 || tc->tc.config.fps_n != kFpsN ||
               tc->tc.config.fps_d != kFpsD) {
        gchar* got = gst_video_time_code_to_string(&tc->tc);
        gchar* want = gst_video_time_code_to_string(&want_tc);
        c->fail(std::string("timecode ") + got + " at " + std::to_string(tc->tc.config.fps_n) + "/" +
                std::to_string(tc->tc.config.fps_d) + ", sent " + want);
        g_free(got);
        g_free(want);
    }
    gst_video_time_code_clear(&want_tc);
    ++c->frames;
    return GST_PAD_PROBE_OK;
}

// The capsfilter named "caps" gets the HDR fields.
bool add_hdr_to_caps(GstElement* pipeline) {
    GstElement* filter = gst_bin_get_by_name(GST_BIN(pipeline), "caps");
    if (filter == nullptr) {
        return false;
    }
    GstCaps* caps = nullptr;
    g_object_get(filter, "caps", &caps, nullptr);
    caps = gst_caps_make_writable(caps);
    const GstVideoMasteringDisplayInfo m = mastering();
    gst_video_mastering_display_info_add_to_caps(&m, caps);
    gst_video_content_light_level_add_to_caps(&kLight, caps);
    g_object_set(filter, "caps", caps, nullptr);
    gst_caps_unref(caps);
    gst_object_unref(filter);
    return true;
}

int usage() {
    std::fprintf(stderr, "usage: side-data-check send|receive FRAMES PIPELINE\n");
    return 2;
}

} // namespace

int main(int argc, char** argv) {
    gst_init(&argc, &argv);
    if (argc != 4) {
        return usage();
    }
    const bool send = std::strcmp(argv[1], "send") == 0;
    if (!send && std::strcmp(argv[1], "receive") != 0) {
        return usage();
    }
    Check c;
    c.want = std::strtoull(argv[2], nullptr, 10);
    GError* error = nullptr;
    GstElement* pipeline = gst_parse_launch(argv[3], &error);
    if (pipeline == nullptr || error != nullptr) {
        std::fprintf(stderr, "side-data-check: bad pipeline: %s\n", error != nullptr ? error->message : "?");
        return 2;
    }
    GstElement* tag = gst_bin_get_by_name(GST_BIN(pipeline), "tag");
    if (tag == nullptr || (send && !add_hdr_to_caps(pipeline))) {
        std::fprintf(stderr, "side-data-check: the pipeline needs an element named tag%s\n",
                     send ? " and a capsfilter named caps" : "");
        return 2;
    }
    c.pad = gst_element_get_static_pad(tag, "sink");
    gst_pad_add_probe(c.pad, GST_PAD_PROBE_TYPE_BUFFER, send ? tag_frame : check_frame, &c, nullptr);

    gst_element_set_state(pipeline, GST_STATE_PLAYING);
    GstBus* bus = gst_element_get_bus(pipeline);
    GstMessage* end = gst_bus_timed_pop_filtered(bus, GST_CLOCK_TIME_NONE,
                                                 static_cast<GstMessageType>(GST_MESSAGE_EOS | GST_MESSAGE_ERROR));
    int rc = 0;
    if (GST_MESSAGE_TYPE(end) == GST_MESSAGE_ERROR) {
        GError* e = nullptr;
        gchar* debug = nullptr;
        gst_message_parse_error(end, &e, &debug);
        std::fprintf(stderr, "side-data-check: error from %s: %s (%s)\n", GST_OBJECT_NAME(GST_MESSAGE_SRC(end)),
                     e->message, debug != nullptr ? debug : "");
        g_error_free(e);
        g_free(debug);
        rc = 1;
    } else if (!c.failure.empty()) {
        std::fprintf(stderr, "side-data-check: %s\n", c.failure.c_str());
        rc = 1;
    } else if (c.frames != c.want) {
        std::fprintf(stderr, "side-data-check: %" G_GUINT64_FORMAT " frames, not %" G_GUINT64_FORMAT "\n", c.frames,
                     c.want);
        rc = 1;
    } else {
        std::printf("side-data-check %s: %" G_GUINT64_FORMAT " frames, captions, timecodes%s as expected\n", argv[1],
                    c.frames, send ? " and HDR caps" : " and HDR caps fields");
    }
    gst_message_unref(end);
    gst_object_unref(bus);
    gst_element_set_state(pipeline, GST_STATE_NULL);
    if (c.checked_caps != nullptr) {
        gst_caps_unref(c.checked_caps);
    }
    gst_object_unref(c.pad);
    gst_object_unref(tag);
    gst_object_unref(pipeline);
    return rc;
}
