#include "rdmastream_gst/video_meta.hpp"

#include "rdmastream/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <limits>

namespace rdmastream::gst {
namespace {

// The bytes from a plane's offset that a reader of a frame of `info` with
// this plane `stride` touches, the way GStreamer reads planes
// (gst_video_frame_copy_plane, the converters): rows of the plane's
// component height, each as long as its visible pixels; for formats whose
// pixels do not pack to whole bytes (v210, UYVP: pixel stride 0) a row is
// the caps' own stride; a palette is 256 entries of 4 bytes. Tiled formats
// are read tile by tile, so only the caps' own tiling is accepted.
// Throws ProtocolError for a stride no reader can use.
std::uint64_t plane_reach(const GstVideoInfo* info, const wire::StreamFormat& format, guint plane) {
    const GstVideoFormatInfo* finfo = info->finfo;
    const std::uint32_t stride = format.planes[plane].stride;
    const auto own_stride = static_cast<std::uint64_t>(GST_VIDEO_INFO_PLANE_STRIDE(info, plane));
    if (stride > static_cast<std::uint32_t>(std::numeric_limits<gint>::max())) {
        throw ProtocolError(fmt::format("stream format {}: plane {} has stride {}, more than GStreamer takes",
                                        format.id, plane, stride));
    }
    if (GST_VIDEO_FORMAT_INFO_HAS_PALETTE(finfo) && plane == 1) {
        return 256 * 4;
    }
    if (GST_VIDEO_FORMAT_INFO_IS_TILED(finfo)) {
        if (stride != own_stride) {
            throw ProtocolError(fmt::format("stream format {}: tiled plane {} has stride {:#x}, its caps' tiling "
                                            "is {:#x}",
                                            format.id, plane, stride, own_stride));
        }
        const gsize next = plane + 1 < GST_VIDEO_INFO_N_PLANES(info) ? GST_VIDEO_INFO_PLANE_OFFSET(info, plane + 1)
                                                                      : GST_VIDEO_INFO_SIZE(info);
        return next - GST_VIDEO_INFO_PLANE_OFFSET(info, plane);
    }
    gint comp[GST_VIDEO_MAX_COMPONENTS];
    gst_video_format_info_component(finfo, plane, comp);
    if (comp[0] < 0) {
        return 0; // no component in this plane: nothing to read
    }
    const auto rows = static_cast<std::uint64_t>(GST_VIDEO_INFO_COMP_HEIGHT(info, comp[0]));
    std::uint64_t row_bytes = static_cast<std::uint64_t>(GST_VIDEO_INFO_COMP_WIDTH(info, comp[0])) *
                              static_cast<std::uint64_t>(GST_VIDEO_INFO_COMP_PSTRIDE(info, comp[0]));
    if (row_bytes == 0) {
        row_bytes = own_stride;
    }
    if (rows == 0) {
        return 0;
    }
    if (stride < row_bytes) {
        throw ProtocolError(fmt::format("stream format {}: plane {} has stride {} for rows of {} bytes", format.id,
                                        plane, stride, row_bytes));
    }
    return std::uint64_t{stride} * (rows - 1) + row_bytes;
}

// Refuses a layout that would send a reader of `buffer` past its end, or that
// lacks planes the caps' format has (GStreamer will not map such a frame).
void check_layout(GstBuffer* buffer, const GstVideoInfo* info, const wire::StreamFormat& format) {
    const guint planes = GST_VIDEO_INFO_N_PLANES(info);
    if (format.plane_count < planes) {
        throw ProtocolError(fmt::format("stream format {} describes {} planes, its caps' format {} has {}", format.id,
                                        format.plane_count, GST_VIDEO_INFO_NAME(info), planes));
    }
    const gsize size = gst_buffer_get_size(buffer);
    for (guint p = 0; p < planes; ++p) {
        const std::uint64_t end = format.planes[p].offset + plane_reach(info, format, p);
        if (end > size) {
            throw ProtocolError(fmt::format("a frame of stream format {}: plane {} reaches byte {}, the frame has {}",
                                            format.id, p, end, size));
        }
    }
}

} // namespace

void set_video_meta(GstBuffer* buffer, const GstVideoInfo* info, const wire::StreamFormat& format) {
    GstVideoMeta* meta = gst_buffer_get_video_meta(buffer);
    if (info == nullptr || format.plane_count == 0) {
        if (meta != nullptr) { // the shell carried raw video before a caps change
            gst_buffer_remove_meta(buffer, &meta->meta);
        }
        return;
    }
    check_layout(buffer, info, format);
    gsize offset[GST_VIDEO_MAX_PLANES] = {};
    gint stride[GST_VIDEO_MAX_PLANES] = {};
    // The caps' plane count: a meta with more planes than the format has
    // would send a mapper past its planes (check_layout refused fewer).
    const auto n = std::min<std::size_t>(GST_VIDEO_INFO_N_PLANES(info), GST_VIDEO_MAX_PLANES);
    for (std::size_t i = 0; i < n; ++i) {
        offset[i] = format.planes[i].offset;
        stride[i] = static_cast<gint>(format.planes[i].stride);
    }
    if (meta == nullptr) {
        gst_buffer_add_video_meta_full(buffer, GST_VIDEO_FRAME_FLAG_NONE, GST_VIDEO_INFO_FORMAT(info),
                                       GST_VIDEO_INFO_WIDTH(info), GST_VIDEO_INFO_HEIGHT(info), static_cast<guint>(n),
                                       offset, stride);
        return;
    }
    meta->flags = GST_VIDEO_FRAME_FLAG_NONE;
    meta->format = GST_VIDEO_INFO_FORMAT(info);
    meta->width = GST_VIDEO_INFO_WIDTH(info);
    meta->height = GST_VIDEO_INFO_HEIGHT(info);
    meta->n_planes = static_cast<guint>(n);
    std::copy(std::begin(offset), std::end(offset), std::begin(meta->offset));
    std::copy(std::begin(stride), std::end(stride), std::begin(meta->stride));
}

} // namespace rdmastream::gst
