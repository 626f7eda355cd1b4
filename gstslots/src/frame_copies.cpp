// SPDX-License-Identifier: LGPL-2.1-or-later
#include "rdmastream_gst/frame_copies.hpp"

#include "rdmastream_gst/side_data_metas.hpp"
#include "rdmastream_gst/video_meta.hpp"

#include <gst/video/video.h>

#include <algorithm>
#include <iterator>
#include <stdexcept>
#include <string>

namespace rdmastream::gst {

FrameCopies::~FrameCopies() {
    if (pool_ != nullptr) {
        // Buffers still downstream keep the pool; it frees them as they come home.
        gst_buffer_pool_set_active(pool_, FALSE);
        gst_object_unref(pool_);
    }
}

void FrameCopies::new_pool(std::size_t size) {
    GstBufferPool* pool = gst_buffer_pool_new();
    GstStructure* config = gst_buffer_pool_get_config(pool);
    // No caps: the pool holds bytes; the frame's layout is in its GstVideoMeta.
    // No maximum: downstream may hold as many copies as it likes, which is
    // the point; the pool keeps what comes home for the next copies.
    gst_buffer_pool_config_set_params(config, nullptr, static_cast<guint>(size), 0, 0);
    if (!gst_buffer_pool_set_config(pool, config) || !gst_buffer_pool_set_active(pool, TRUE)) {
        gst_object_unref(pool);
        throw std::runtime_error("could not make a buffer pool of " + std::to_string(size) +
                                 "-byte buffers to copy frames into");
    }
    if (pool_ != nullptr) {
        gst_buffer_pool_set_active(pool_, FALSE);
        gst_object_unref(pool_);
    }
    pool_ = pool;
    size_ = size;
    ++pools_made_;
}

GstBuffer* FrameCopies::acquire(std::span<const std::byte> bytes) {
    if (pool_ == nullptr || bytes.size() > size_) {
        new_pool(size_ == 0 ? bytes.size() : std::max(bytes.size(), 2 * size_));
    }
    GstBuffer* buffer = nullptr;
    if (gst_buffer_pool_acquire_buffer(pool_, &buffer, nullptr) != GST_FLOW_OK || buffer == nullptr) {
        throw std::runtime_error("the copy pool gave no buffer for a " + std::to_string(bytes.size()) +
                                 "-byte frame");
    }
    gst_buffer_fill(buffer, 0, bytes.data(), bytes.size());
    gst_buffer_set_size(buffer, static_cast<gssize>(bytes.size())); // the pool restores its size when it comes home
    count_.fetch_add(1, std::memory_order_relaxed);
    return buffer;
}

namespace {

// Pooled: the pool keeps the meta on the buffer, to be rewritten in place
// next time, instead of freeing it with every copy.
void keep_with_the_buffer(GstVideoMeta* meta) {
    if (meta != nullptr) {
        meta->meta.flags = static_cast<GstMetaFlags>(meta->meta.flags | GST_META_FLAG_POOLED);
    }
}

} // namespace

GstBuffer* FrameCopies::copy(std::span<const std::byte> payload, const FrameLayout& layout) {
    GstBuffer* buffer = acquire(payload);
    set_video_meta(buffer, layout);
    keep_with_the_buffer(gst_buffer_get_video_meta(buffer));
    return buffer;
}

GstBuffer* FrameCopies::copy(GstBuffer* src) {
    GstMapInfo map;
    if (!gst_buffer_map(src, &map, GST_MAP_READ)) {
        throw std::runtime_error("could not read a frame to copy it");
    }
    GstBuffer* buffer = nullptr;
    try {
        buffer = acquire({reinterpret_cast<const std::byte*>(map.data), map.size});
    } catch (...) {
        gst_buffer_unmap(src, &map);
        throw;
    }
    gst_buffer_unmap(src, &map);
    gst_buffer_copy_into(buffer, src, static_cast<GstBufferCopyFlags>(GST_BUFFER_COPY_FLAGS | GST_BUFFER_COPY_TIMESTAMPS),
                         0, static_cast<gsize>(-1));
    copy_side_data_metas(src, buffer); // captions, timecode (the pool drops them when the copy comes home)
    const GstVideoMeta* from = gst_buffer_get_video_meta(src);
    GstVideoMeta* to = gst_buffer_get_video_meta(buffer);
    if (from == nullptr) {
        if (to != nullptr) gst_buffer_remove_meta(buffer, &to->meta); // a copy of an earlier format's frame had one
        return buffer;
    }
    if (to == nullptr) {
        // (The arrays are not const in GStreamer's signature; it only reads them.)
        to = gst_buffer_add_video_meta_full(buffer, from->flags, from->format, from->width, from->height,
                                            from->n_planes, const_cast<gsize*>(from->offset),
                                            const_cast<gint*>(from->stride));
        keep_with_the_buffer(to);
        return buffer;
    }
    to->flags = from->flags;
    to->format = from->format;
    to->width = from->width;
    to->height = from->height;
    to->n_planes = from->n_planes;
    std::copy(std::begin(from->offset), std::end(from->offset), std::begin(to->offset));
    std::copy(std::begin(from->stride), std::end(from->stride), std::begin(to->stride));
    return buffer;
}

} // namespace rdmastream::gst
