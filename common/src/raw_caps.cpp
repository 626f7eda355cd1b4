// SPDX-License-Identifier: LGPL-2.1-or-later
#include "rdmastream_cli/raw_caps.hpp"
#include "rdmastream_cli/pixel_formats.hpp"

#include "rdmastream/error.hpp"

extern "C" {
#include <libavutil/pixdesc.h>
}

#include <fmt/format.h>

namespace rdmastream::cli {

std::string to_caps_string(const RawVideoCaps& c) {
    const auto name = gst_format_name(c.format);
    if (!name) {
        const char* av = av_get_pix_fmt_name(c.format);
        throw UserError(fmt::format("pixel format {} has no GStreamer equivalent to announce: convert with "
                                    "--pix-fmt (e.g. --pix-fmt yuv420p or --pix-fmt rgb24)",
                                    av ? av : "none"));
    }
    std::string s = fmt::format("video/x-raw,format={},width={},height={},framerate={}/{}", *name, c.width, c.height,
                                c.framerate.num, c.framerate.den);
    if (c.pixel_aspect_ratio.num > 0 && c.pixel_aspect_ratio.den > 0) {
        s += fmt::format(",pixel-aspect-ratio={}/{}", c.pixel_aspect_ratio.num, c.pixel_aspect_ratio.den);
    }
    if (c.interlaced) {
        s += ",interlace-mode=interleaved";
    }
    return s;
}

} // namespace rdmastream::cli
