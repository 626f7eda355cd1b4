// SPDX-License-Identifier: LGPL-2.1-or-later
// A sender's raw video caps as rdmarecv's FFmpeg outputs (-o, --framemd5)
// read them: FFmpeg's pixel format for the caps' format, the size, the
// frame rate, the pixel aspect ratio, interlacing. Read from what GStreamer
// parsed, the same GstCaps FrameLayout checks the layout by (gstslots/), so
// one caps string means one picture to every output and to every element
// downstream of --gst. Writing caps is common/'s raw_caps.hpp: rdmasend
// announces them without GStreamer.
#pragma once

#include "rdmastream_cli/raw_caps.hpp"

#include <gst/gst.h>

#include <string>

namespace rdmastream::cli {

// From `caps` as GStreamer read them (one structure, as FrameLayout::check
// leaves them); `text`, the string they were read from, is for messages.
// Throws ProtocolError on caps that are not video/x-raw, a format FFmpeg
// has no pixel format for, no positive width and height, or a frame rate or
// pixel aspect ratio that is not a fraction n/d with n >= 0 and d > 0.
// Absent, the frame rate and the aspect ratio are 0/1 (unknown).
RawVideoCaps raw_video_caps(const GstCaps* caps, const std::string& text);

// The same from the string, parsed by GStreamer (gst_caps_from_string);
// throws ProtocolError too for text GStreamer cannot read, or caps of more
// than one structure.
RawVideoCaps parse_caps_string(const std::string& caps);

} // namespace rdmastream::cli
