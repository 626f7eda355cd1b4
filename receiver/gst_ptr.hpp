// SPDX-License-Identifier: LGPL-2.1-or-later
// Owning pointers for the GStreamer objects rdmarecv --gst holds: one
// deleter per unref function, as ff_ptr.hpp does for FFmpeg.
#pragma once

#include <gst/gst.h>

#include <memory>

namespace rdmastream::cli {

struct GstObjectDeleter {
    void operator()(gpointer o) const noexcept { gst_object_unref(o); }
};
struct GstBufferPoolDeleter { // its buffers still downstream are freed as they come home
    void operator()(GstBufferPool* p) const noexcept {
        gst_buffer_pool_set_active(p, FALSE);
        gst_object_unref(p);
    }
};
struct GstCapsDeleter {
    void operator()(GstCaps* c) const noexcept { gst_caps_unref(c); }
};
struct GstMessageDeleter {
    void operator()(GstMessage* m) const noexcept { gst_message_unref(m); }
};
struct GErrorDeleter {
    void operator()(GError* e) const noexcept { g_error_free(e); }
};
struct GFreeDeleter {
    void operator()(gpointer p) const noexcept { g_free(p); }
};

using GstElementPtr = std::unique_ptr<GstElement, GstObjectDeleter>;
using GstBusPtr = std::unique_ptr<GstBus, GstObjectDeleter>;
using GstBufferPoolPtr = std::unique_ptr<GstBufferPool, GstBufferPoolDeleter>;
using GstCapsPtr = std::unique_ptr<GstCaps, GstCapsDeleter>;
using GstMessagePtr = std::unique_ptr<GstMessage, GstMessageDeleter>;
using GErrorPtr = std::unique_ptr<GError, GErrorDeleter>;
using GCharPtr = std::unique_ptr<gchar, GFreeDeleter>;

} // namespace rdmastream::cli
