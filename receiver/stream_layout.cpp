// SPDX-License-Identifier: LGPL-2.1-or-later
#include "stream_layout.hpp"
#include "raw_video_caps.hpp"

#include "rdmastream/error.hpp"

#include <fmt/format.h>

namespace rdmastream::cli {

StreamLayout read_stream_layout(const StreamFormat& format, std::string_view sender) {
    gst::FrameLayout layout = gst::FrameLayout::check(format, sender);
    const std::string what = fmt::format("stream format {} from the sender at {}", format.id, sender);
    if (!layout.raw_video()) {
        throw ProtocolError(fmt::format("{}: caps \"{}\" are not raw video (video/x-raw): rdmarecv writes raw "
                                        "frames only",
                                        what, format.caps));
    }
    // FFmpeg's names for what GStreamer read: one reading of the caps.
    const RawVideoCaps caps = raw_video_caps(layout.caps(), format.caps);
    const FrameGeometry geometry = frame_geometry(caps.format, caps.width, caps.height);
    if (static_cast<unsigned>(geometry.plane_count) != layout.plane_count()) {
        throw ProtocolError(fmt::format("{}: FFmpeg's {} has {} planes, GStreamer's {}", what,
                                        GST_VIDEO_INFO_NAME(&layout.info()), geometry.plane_count, layout.plane_count()));
    }
    // FFmpeg's rows at the layout's offsets and strides: within what the
    // layout checked, so the one per-frame comparison covers them too.
    for (int i = 0; i < geometry.plane_count; ++i) {
        const PlaneGeometry& g = geometry.planes[static_cast<std::size_t>(i)];
        const gst::PlaneExtent& p = layout.plane(static_cast<unsigned>(i));
        if (g.rows == 0) continue;
        const std::uint64_t end = std::uint64_t{p.offset} +
                                  std::uint64_t{p.stride} * static_cast<std::uint64_t>(g.rows - 1) + g.row_bytes;
        if (p.stride < g.row_bytes || end > layout.min_payload()) {
            throw ProtocolError(fmt::format("{}: plane {} (offset {}, stride {}) does not hold FFmpeg's {} rows of {} "
                                            "bytes within the frame's {} bytes",
                                            what, i, p.offset, p.stride, g.rows, g.row_bytes, layout.min_payload()));
        }
    }
    return StreamLayout{std::move(layout), caps, geometry};
}

} // namespace rdmastream::cli
