// SPDX-License-Identifier: LGPL-2.1-or-later
// rdmarecv's outputs take a sender's caps in two forms (receiver/
// stream_layout.cpp): parse_caps_string's FFmpeg format and size, which -o
// and --framemd5 read frames by, and gst_video_info_from_caps's (gstslots'
// FrameLayout), which bound the payload and go into the GstVideoMeta
// downstream reads by. Both come from GStreamer's one parse of the caps, so
// where both accept the caps they must agree on format, width and height:
// frames checked by one and read by the other would otherwise overrun.
// Input: the caps, as the wire carries them.
#include "fuzz_gst.hpp"
#include "fuzz_input.hpp"

#include "raw_video_caps.hpp"

#include "rdmastream_cli/pixel_formats.hpp"

#include <gst/video/video.h>

#include <string>

namespace cli = rdmastream::cli;
using rdmastream::fuzz::accepted;

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
    const auto ours = accepted([&] { return cli::parse_caps_string(text); });
    GstCaps* caps = gst_caps_from_string(text.c_str());
    rdmastream::fuzz::CriticalsAreFindings criticals; // parsed or not: the calls below are gst_sink's
    GstVideoInfo info;
    const bool theirs = caps != nullptr && gst_caps_is_fixed(caps) && gst_video_info_from_caps(&info, caps);
    if (ours && theirs) {
        const char* name = gst_video_format_to_string(GST_VIDEO_INFO_FORMAT(&info));
        FUZZ_CHECK(cli::av_pixel_format(name ? name : "") == ours->format);
        FUZZ_CHECK(GST_VIDEO_INFO_WIDTH(&info) == ours->width);
        FUZZ_CHECK(GST_VIDEO_INFO_HEIGHT(&info) == ours->height);
    }
    if (caps != nullptr) {
        gst_caps_unref(caps);
    }
    return 0;
}
