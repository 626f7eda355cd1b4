// SPDX-License-Identifier: LGPL-2.1-or-later
// FFmpeg pixel formats <-> GStreamer video format names, the names the
// stream's caps carry (docs/protocol.md: caps are GStreamer caps, whatever
// produced the stream). Only formats whose memory layout is identical on both
// sides are listed: a frame passes through untouched in either direction.
#pragma once

extern "C" {
#include <libavutil/pixfmt.h>
}

#include <optional>
#include <string_view>

namespace rdmastream::cli {

// nullopt: GStreamer has no format with this exact layout.
std::optional<std::string_view> gst_format_name(AVPixelFormat fmt) noexcept;
// AV_PIX_FMT_NONE when the name is not one we can map.
AVPixelFormat av_pixel_format(std::string_view gst_name) noexcept;

} // namespace rdmastream::cli
