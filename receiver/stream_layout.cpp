// SPDX-License-Identifier: LGPL-2.1-or-later
#include "stream_layout.hpp"
#include "raw_audio_caps.hpp"
#include "raw_video_caps.hpp"

#include "rdmastream/error.hpp"

#include <fmt/format.h>

namespace rdmastream::cli {
namespace {

StreamLayout read_audio_layout(gst::FrameLayout layout, const std::string& what) {
    const StreamFormat& format = layout.format();
    if (format.plane_count != 0) {
        throw ProtocolError(fmt::format("{}: audio caps \"{}\" with {} planes: an audio format has none (a planar "
                                        "frame's channels lie back to back)",
                                        what, format.caps, format.plane_count));
    }
    RawAudioCaps caps;
    try {
        caps = raw_audio_caps(layout.caps(), format.caps);
    } catch (const ProtocolError& e) {
        throw ProtocolError(fmt::format("{}: {}", what, e.what()));
    }
    const auto bytes = static_cast<std::uint32_t>(sample_frame_bytes(caps));
    return StreamLayout{std::move(layout), true, RawVideoCaps{}, FrameGeometry{}, caps, bytes};
}

} // namespace

StreamLayout read_stream_layout(const StreamFormat& format, std::string_view sender) {
    gst::FrameLayout layout = gst::FrameLayout::check(format, sender);
    const std::string what = fmt::format("stream format {} from the sender at {}", format.id, sender);
    if (is_raw_audio(layout.caps())) return read_audio_layout(std::move(layout), what);
    if (!layout.raw_video()) {
        throw ProtocolError(fmt::format("{}: caps \"{}\" are neither raw video (video/x-raw) nor raw audio "
                                        "(audio/x-raw): rdmarecv writes raw frames only",
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
    return StreamLayout{std::move(layout), false, caps, geometry, RawAudioCaps{}, 0};
}

void StreamLayout::refuse_audio_frame(std::uint64_t sequence, std::size_t payload_size) const {
    const StreamFormat& format = layout.format();
    if (payload_size > format.max_frame_size) {
        throw ProtocolError(fmt::format("frame {} from the sender at {} has {} payload bytes, more than the {} its "
                                        "stream format {} ({}) allows: refused",
                                        sequence, layout.sender(), payload_size, format.max_frame_size, format.id,
                                        format.caps));
    }
    throw ProtocolError(fmt::format("frame {} from the sender at {} has {} payload bytes, not a whole number of "
                                    "{}-byte sample frames of its stream format {} ({}): refused",
                                    sequence, layout.sender(), payload_size, sample_frame_bytes, format.id,
                                    format.caps));
}

} // namespace rdmastream::cli
