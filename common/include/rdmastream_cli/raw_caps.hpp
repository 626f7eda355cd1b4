// SPDX-License-Identifier: LGPL-2.1-or-later
// A raw video stream's caps in FFmpeg's terms, and the caps string rdmasend
// announces for them, written without GStreamer (rdmasend links none).
// Reading a sender's caps is GStreamer's job: rdmarecv reads them with
// GStreamer's parser into the same struct (receiver/raw_video_caps.hpp),
// the elements with GStreamer itself.
#pragma once

extern "C" {
#include <libavutil/pixfmt.h>
#include <libavutil/rational.h>
}

#include <string>

namespace rdmastream::cli {

struct RawVideoCaps {
    AVPixelFormat format = AV_PIX_FMT_NONE;
    int width = 0;
    int height = 0;
    AVRational framerate{0, 1};          // 0/1: variable or unknown
    AVRational pixel_aspect_ratio{0, 1}; // 0/1: unknown (not written)
    bool interlaced = false;
};

// "video/x-raw,format=I420,width=...". Throws UserError when the format has
// no GStreamer name (the message suggests --pix-fmt).
std::string to_caps_string(const RawVideoCaps& caps);

} // namespace rdmastream::cli
