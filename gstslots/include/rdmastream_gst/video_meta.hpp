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
// The layout is off the wire: throws ProtocolError, leaving the meta as it
// was, when it has fewer planes than the caps' format, a stride shorter than
// a row (or, for a tiled format, other than the caps' own tiling), or a
// plane that reaches past the end of `buffer` (its size: the frame's
// payload), which a reader downstream would overrun.
void set_video_meta(GstBuffer* buffer, const GstVideoInfo* info, const wire::StreamFormat& format);

} // namespace rdmastream::gst
