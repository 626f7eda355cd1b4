// SPDX-License-Identifier: LGPL-2.1-or-later
// The caps string of a raw video stream, both ways: what rdmasend announces
// and what rdmarecv (or the GStreamer elements) read back. Accepts what
// gst_caps_to_string writes ("format=(string)I420, width=(int)320") as well
// as the short form ("format=I420,width=320").
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
// Throws ProtocolError on caps that are not raw video we can map.
RawVideoCaps parse_caps_string(const std::string& caps);

} // namespace rdmastream::cli
