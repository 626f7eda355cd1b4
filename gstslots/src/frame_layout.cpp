// SPDX-License-Identifier: LGPL-2.1-or-later
#include "rdmastream_gst/frame_layout.hpp"

#include "rdmastream/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

namespace rdmastream::gst {
namespace {

// What a format's messages start with.
std::string who(const StreamFormat& format, std::string_view sender) {
    return fmt::format("stream format {} from the sender at {}", format.id, sender);
}

// Plane `plane` of `info` at the sender's `offset` and `stride`, measured
// the way GStreamer reads planes (gst_video_frame_copy_plane, the
// converters): rows of the plane's component height, each as long as its
// visible pixels; for formats whose pixels do not pack to whole bytes
// (v210, UYVP: pixel stride 0) a row is the caps' own stride; a palette is
// 256 entries of 4 bytes. Tiled formats are read tile by tile, so only the
// caps' own tiling is taken. Throws ProtocolError for a stride no reader
// can use.
PlaneExtent measure(const GstVideoInfo& info, guint plane, std::uint32_t offset, std::uint32_t stride,
                    const std::string& what) {
    const GstVideoFormatInfo* finfo = info.finfo;
    const auto own_stride = static_cast<std::uint64_t>(GST_VIDEO_INFO_PLANE_STRIDE(&info, plane));
    if (stride > static_cast<std::uint32_t>(std::numeric_limits<gint>::max())) {
        throw ProtocolError(fmt::format("{}: plane {} has stride {:#x}, more than GStreamer takes (2^31 - 1): the "
                                        "sender's layout is broken",
                                        what, plane, stride));
    }
    PlaneExtent e{offset, stride, 0, 0, offset};
    if (GST_VIDEO_FORMAT_INFO_HAS_PALETTE(finfo) && plane == 1) {
        e.rows = 1;
        e.row_bytes = 256 * 4;
    } else if (GST_VIDEO_FORMAT_INFO_IS_TILED(finfo)) {
        if (stride != own_stride) {
            throw ProtocolError(fmt::format("{}: tiled plane {} has stride {:#x}, its caps' tiling is {:#x}", what,
                                            plane, stride, own_stride));
        }
        const gsize next = plane + 1 < GST_VIDEO_INFO_N_PLANES(&info) ? GST_VIDEO_INFO_PLANE_OFFSET(&info, plane + 1)
                                                                       : GST_VIDEO_INFO_SIZE(&info);
        e.rows = 1; // read tile by tile: the plane as one block
        e.row_bytes = next - GST_VIDEO_INFO_PLANE_OFFSET(&info, plane);
    } else {
        gint comp[GST_VIDEO_MAX_COMPONENTS];
        gst_video_format_info_component(finfo, plane, comp);
        if (comp[0] < 0) {
            return e; // no component in this plane: nothing to read
        }
        e.rows = static_cast<std::uint64_t>(GST_VIDEO_INFO_COMP_HEIGHT(&info, comp[0]));
        e.row_bytes = static_cast<std::uint64_t>(GST_VIDEO_INFO_COMP_WIDTH(&info, comp[0])) *
                      static_cast<std::uint64_t>(GST_VIDEO_INFO_COMP_PSTRIDE(&info, comp[0]));
        if (e.row_bytes == 0) {
            e.row_bytes = own_stride;
        }
        if (e.rows == 0) {
            return e;
        }
        if (stride < e.row_bytes) {
            throw ProtocolError(fmt::format("{}: plane {} has stride {} for rows of {} bytes", what, plane, stride,
                                            e.row_bytes));
        }
    }
    // At most 2^31 * 2^31 + 2^32: no overflow in 64 bits.
    e.end = std::uint64_t{offset} + std::uint64_t{stride} * (e.rows - 1) + e.row_bytes;
    return e;
}

} // namespace

FrameLayout FrameLayout::check(const StreamFormat& format, std::string_view sender) {
    FrameLayout l;
    l.format_ = format;
    l.sender_ = sender;
    const std::string what = who(format, sender);
    // rdmarecv without --gst uses GStreamer only here (its caps parser):
    // initialise it on first use (a no-op once done).
    if (!gst_is_initialized()) gst_init(nullptr, nullptr);
    l.caps_.reset(gst_caps_from_string(format.caps.c_str()));
    if (!l.caps_ || !gst_caps_is_fixed(l.caps_.get())) {
        throw ProtocolError(fmt::format("{}: GStreamer cannot read its caps \"{}\" as one fixed format", what,
                                        format.caps));
    }
    if (!gst_structure_has_name(gst_caps_get_structure(l.caps_.get(), 0), "video/x-raw")) {
        return l; // opaque: the bytes go on as they came, whatever their size
    }
    if (!gst_video_info_from_caps(&l.info_, l.caps_.get())) {
        throw ProtocolError(fmt::format("{}: GStreamer cannot read \"{}\" as raw video (an unknown format, or a "
                                        "picture too large to address)",
                                        what, format.caps));
    }
    l.raw_video_ = true;
    l.plane_count_ = GST_VIDEO_INFO_N_PLANES(&l.info_);
    l.sender_layout_ = format.plane_count > 0;
    if (l.sender_layout_ && format.plane_count < l.plane_count_) {
        throw ProtocolError(fmt::format("{} describes {} planes, its caps' format {} has {}", what,
                                        format.plane_count, GST_VIDEO_INFO_NAME(&l.info_), l.plane_count_));
    }
    for (unsigned p = 0; p < l.plane_count_; ++p) {
        // Without the sender's layout, frames are in the caps' own (no meta).
        const std::uint32_t offset = l.sender_layout_ ? format.planes[p].offset
                                                      : static_cast<std::uint32_t>(GST_VIDEO_INFO_PLANE_OFFSET(&l.info_, p));
        const std::uint32_t stride = l.sender_layout_ ? format.planes[p].stride
                                                      : static_cast<std::uint32_t>(GST_VIDEO_INFO_PLANE_STRIDE(&l.info_, p));
        const PlaneExtent e = measure(l.info_, p, offset, stride, what);
        if (e.end > format.max_frame_size) {
            throw ProtocolError(fmt::format("{}: plane {} (offset {}, stride {}, {} rows of {} bytes) reaches byte "
                                            "{}, past the format's {}-byte max_frame_size ({}): the sender's layout "
                                            "is broken",
                                            what, p, e.offset, e.stride, e.rows, e.row_bytes, e.end,
                                            format.max_frame_size, format.caps));
        }
        l.planes_[p] = e;
        l.min_payload_ = std::max(l.min_payload_, e.end);
    }
    return l;
}

void FrameLayout::refuse_frame(std::uint64_t sequence, std::size_t payload_size) const {
    throw ProtocolError(fmt::format("frame {} from the sender at {} has {} payload bytes, but its stream format {} "
                                    "({}) needs {}: refused",
                                    sequence, sender_, payload_size, format_.id, format_.caps, min_payload_));
}

} // namespace rdmastream::gst
