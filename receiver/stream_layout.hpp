// SPDX-License-Identifier: LGPL-2.1-or-later
// A stream format as rdmarecv's outputs read it, worked out once per format
// before any of them sees a frame: GStreamer's checked layout (where the
// planes are, how many bytes a frame must have; gstslots' FrameLayout, the
// one rdmasrc uses too), FFmpeg's names for the caps GStreamer read
// (raw_video_caps), and the bytes each plane's visible rows span (what -o
// and --framemd5 read). FFmpeg's rows must lie within the layout's checked
// bytes, so a frame that passes layout.check_frame (one comparison, in the
// receive loop) is safe for every output.
#pragma once

#include "rdmastream_cli/plane_geometry.hpp"
#include "rdmastream_cli/raw_caps.hpp"
#include "rdmastream_gst/frame_layout.hpp"

#include <string_view>

namespace rdmastream::cli {

struct StreamLayout {
    gst::FrameLayout layout; // the planes' offsets and strides are layout.plane(i)'s
    RawVideoCaps caps;       // FFmpeg's pixel format, size, rate
    FrameGeometry geometry;  // visible bytes per plane, at layout's offsets and strides
};

// Throws ProtocolError (naming `sender`, the format and the numbers) for a
// format FrameLayout refuses, caps that are not raw video FFmpeg can name
// (raw_video_caps), or FFmpeg's planes not matching GStreamer's.
StreamLayout read_stream_layout(const StreamFormat& format, std::string_view sender);

} // namespace rdmastream::cli
