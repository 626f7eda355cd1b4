#include "rdmastream_gst/frame_copies.hpp"

#include "rdmastream_gst/video_meta.hpp"

#include <gst/video/video.h>

#include <algorithm>
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

GstBuffer* FrameCopies::copy(std::span<const std::byte> payload, const FrameLayout& layout) {
    if (pool_ == nullptr || payload.size() > size_) {
        new_pool(size_ == 0 ? payload.size() : std::max(payload.size(), 2 * size_));
    }
    GstBuffer* buffer = nullptr;
    if (gst_buffer_pool_acquire_buffer(pool_, &buffer, nullptr) != GST_FLOW_OK || buffer == nullptr) {
        throw std::runtime_error("the copy pool gave no buffer for a " + std::to_string(payload.size()) +
                                 "-byte frame");
    }
    gst_buffer_fill(buffer, 0, payload.data(), payload.size());
    gst_buffer_set_size(buffer, static_cast<gssize>(payload.size())); // the pool restores its size when it comes home
    set_video_meta(buffer, layout);
    if (GstVideoMeta* meta = gst_buffer_get_video_meta(buffer)) {
        // Pooled: the pool keeps it on the buffer, for set_video_meta to
        // rewrite in place next time, instead of freeing it per frame.
        meta->meta.flags = static_cast<GstMetaFlags>(meta->meta.flags | GST_META_FLAG_POOLED);
    }
    ++count_;
    return buffer;
}

} // namespace rdmastream::gst
