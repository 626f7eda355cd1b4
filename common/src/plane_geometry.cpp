// SPDX-License-Identifier: LGPL-2.1-or-later
#include "rdmastream_cli/plane_geometry.hpp"

#include "rdmastream/error.hpp"

extern "C" {
#include <libavutil/imgutils.h>
#include <libavutil/pixdesc.h>
}

#include <fmt/format.h>

#include <algorithm>

namespace rdmastream::cli {

FrameGeometry frame_geometry(AVPixelFormat format, int width, int height) {
    const AVPixFmtDescriptor* desc = av_pix_fmt_desc_get(format);
    if (desc == nullptr || (desc->flags & (AV_PIX_FMT_FLAG_PAL | AV_PIX_FMT_FLAG_HWACCEL | AV_PIX_FMT_FLAG_BITSTREAM))) {
        throw UserError(fmt::format("pixel format {} is not planar or packed picture data: convert with --pix-fmt",
                                    desc ? desc->name : "none"));
    }
    std::array<int, 4> linesize{};
    if (av_image_fill_linesizes(linesize.data(), format, width) < 0) {
        throw UserError(fmt::format("a {}x{} {} frame is not a valid picture", width, height, desc->name));
    }
    std::array<ptrdiff_t, 4> lines{};
    for (std::size_t i = 0; i < 4; ++i) lines[i] = linesize[i];
    std::array<std::size_t, 4> sizes{};
    if (av_image_fill_plane_sizes(sizes.data(), format, height, lines.data()) < 0) {
        throw UserError(fmt::format("a {}x{} {} frame is not a valid picture", width, height, desc->name));
    }
    FrameGeometry g;
    g.plane_count = av_pix_fmt_count_planes(format);
    for (int i = 0; i < g.plane_count; ++i) {
        const auto idx = static_cast<std::size_t>(i);
        g.planes[idx].row_bytes = static_cast<std::size_t>(linesize[idx]);
        g.planes[idx].rows = linesize[idx] > 0 ? static_cast<int>(sizes[idx] / static_cast<std::size_t>(linesize[idx])) : 0;
        g.packed_size += sizes[idx];
    }
    return g;
}

} // namespace rdmastream::cli
