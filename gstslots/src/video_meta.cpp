// SPDX-License-Identifier: LGPL-2.1-or-later
#include "rdmastream_gst/video_meta.hpp"

#include <gst/video/video.h>

#include <algorithm>
#include <iterator>

namespace rdmastream::gst {

void set_video_meta(GstBuffer* buffer, const FrameLayout& layout) noexcept {
    GstVideoMeta* meta = gst_buffer_get_video_meta(buffer);
    if (!layout.raw_video() || !layout.sender_layout()) {
        if (meta != nullptr) { // the shell carried the sender's layout before a caps change
            gst_buffer_remove_meta(buffer, &meta->meta);
        }
        return;
    }
    // The caps' plane count: a meta with more planes than the format has
    // would send a mapper past its planes (FrameLayout refused fewer).
    const GstVideoInfo& info = layout.info();
    const guint n = layout.plane_count();
    gsize offset[GST_VIDEO_MAX_PLANES] = {};
    gint stride[GST_VIDEO_MAX_PLANES] = {};
    for (guint i = 0; i < n; ++i) {
        offset[i] = layout.plane(i).offset;
        stride[i] = static_cast<gint>(layout.plane(i).stride); // FrameLayout: at most G_MAXINT
    }
    if (meta == nullptr) {
        gst_buffer_add_video_meta_full(buffer, GST_VIDEO_FRAME_FLAG_NONE, GST_VIDEO_INFO_FORMAT(&info),
                                       GST_VIDEO_INFO_WIDTH(&info), GST_VIDEO_INFO_HEIGHT(&info), n, offset, stride);
        return;
    }
    meta->flags = GST_VIDEO_FRAME_FLAG_NONE;
    meta->format = GST_VIDEO_INFO_FORMAT(&info);
    meta->width = GST_VIDEO_INFO_WIDTH(&info);
    meta->height = GST_VIDEO_INFO_HEIGHT(&info);
    meta->n_planes = n;
    std::copy(std::begin(offset), std::end(offset), std::begin(meta->offset));
    std::copy(std::begin(stride), std::end(stride), std::begin(meta->stride));
}

} // namespace rdmastream::gst
