// The GstVideoMeta of a buffer that wraps a ring slot: the sender's plane
// offsets and strides, which GStreamer cannot derive from the caps (decoders
// pad rows and planes as they like).
#pragma once

#include "rdmastream/wire.hpp"

#include <gst/video/video.h>

namespace rdmastream::gst {

// Describes `format`'s planes in `buffer`'s GstVideoMeta (at most as many
// planes as `info` has). A recycled SlotBuffers shell keeps its meta and it
// is rewritten in place, so the per-frame path allocates nothing; a buffer
// without one gets one. `info` nullptr (not raw video) or a format without
// planes removes the meta: the buffer then is the caps' own layout, or
// opaque bytes.
void set_video_meta(GstBuffer* buffer, const GstVideoInfo* info, const wire::StreamFormat& format);

} // namespace rdmastream::gst
