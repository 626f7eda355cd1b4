// SPDX-License-Identifier: LGPL-2.1-or-later
// A peer's caps string read the way rdmasrc adopts a format
// (gst-plugin/rdmasrc_create.cpp, adopt_format): gst_caps_from_string,
// fixed or refused, raw video through gst_video_info_from_caps, the frame
// duration from its framerate. Input: the caps, as the wire carries them.
// Findings: crashes, sanitizer reports, GLib criticals once the caps parsed.
#include "fuzz_gst.hpp"
#include "fuzz_input.hpp"

#include <gst/video/video.h>

#include <string>

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    rdmastream::fuzz::init_gstreamer();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    if (!rdmastream::fuzz::wire_caps(text)) {
        return -1; // never off the wire: not worth keeping
    }
    if (!rdmastream::fuzz::balanced(text)) {
        return -1; // GStreamer leaks on these (fuzz_gst.hpp)
    }
    GstCaps* caps = gst_caps_from_string(text.c_str());
    if (caps == nullptr) {
        return 0;
    }
    rdmastream::fuzz::CriticalsAreFindings criticals; // parsed: from here on the arguments are rdmasrc's
    if (gst_caps_is_fixed(caps)) {
        GstVideoInfo info;
        const bool raw = gst_structure_has_name(gst_caps_get_structure(caps, 0), "video/x-raw") &&
                         gst_video_info_from_caps(&info, caps);
        if (raw) {
            FUZZ_CHECK(GST_VIDEO_INFO_N_PLANES(&info) <= GST_VIDEO_MAX_PLANES);
            if (info.fps_n > 0) {
                (void)gst_util_uint64_scale_int(GST_SECOND, info.fps_d, info.fps_n);
            }
        }
        FUZZ_CHECK(gst_caps_is_equal(caps, caps));
    }
    gst_caps_unref(caps);
    return 0;
}
