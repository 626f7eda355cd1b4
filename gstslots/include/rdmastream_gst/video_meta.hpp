// SPDX-License-Identifier: LGPL-2.1-or-later
// The GstVideoMeta of a buffer that wraps a ring slot: the sender's plane
// offsets and strides, which GStreamer cannot derive from the caps (decoders
// pad rows and planes as they like).
#pragma once

#include "rdmastream_gst/frame_layout.hpp"

#include <gst/gst.h>

namespace rdmastream::gst {

// Describes `layout`'s planes in `buffer`'s GstVideoMeta. A recycled
// SlotBuffers shell keeps its meta and it is rewritten in place, so the
// per-frame path allocates nothing; a buffer without one gets one. Opaque
// caps, or raw video in the caps' own layout (the sender gave none), remove
// the meta: downstream then reads the caps' layout.
// The layout was checked when the format arrived (FrameLayout::check) and
// the frame against it (check_frame) before the buffer was made, so nothing
// here can fail: `buffer` must hold at least layout.min_payload() bytes.
void set_video_meta(GstBuffer* buffer, const FrameLayout& layout) noexcept;

} // namespace rdmastream::gst
