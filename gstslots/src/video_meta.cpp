#include "rdmastream_gst/video_meta.hpp"

#include <algorithm>
#include <iterator>

namespace rdmastream::gst {

void set_video_meta(GstBuffer* buffer, const GstVideoInfo* info, const wire::StreamFormat& format) {
    GstVideoMeta* meta = gst_buffer_get_video_meta(buffer);
    if (info == nullptr || format.plane_count == 0) {
        if (meta != nullptr) { // the shell carried raw video before a caps change
            gst_buffer_remove_meta(buffer, &meta->meta);
        }
        return;
    }
    gsize offset[GST_VIDEO_MAX_PLANES] = {};
    gint stride[GST_VIDEO_MAX_PLANES] = {};
    // The caps' plane count bounds it: a meta with more planes than the
    // format has would send a mapper past its planes.
    const auto n = std::min<std::size_t>({format.plane_count, GST_VIDEO_INFO_N_PLANES(info), GST_VIDEO_MAX_PLANES});
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
