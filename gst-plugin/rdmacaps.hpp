// SPDX-License-Identifier: LGPL-2.1-or-later
// What GStreamer caps become on the wire, and back: the stream format (caps
// string + plane layout). Pure functions, no RDMA: the unit tests drive them
// natively. A buffer's flags and times: gstslots' frame_buffer.hpp.
// docs/protocol.md ("Stream format", "Slot header") is the wire side.
#pragma once

#include "rdmastream/format.hpp"

#include <gst/gst.h>
#include <gst/video/video.h>

#include <cstdint>
#include <optional>
#include <string>

namespace rdmastream::gst {

// The plane layout of a raw video frame, as the wire carries it.
struct PlaneSet {
    std::array<PlaneLayout, kMaxPlanes> planes{};
    std::uint8_t count = 0;
    bool operator==(const PlaneSet& other) const noexcept;
};

// Planes of the default layout for `info` (what a buffer without GstVideoMeta has).
PlaneSet planes_of(const GstVideoInfo& info);
// Planes a GstVideoMeta describes (offsets/strides of a padded or foreign layout).
PlaneSet planes_of(const GstVideoMeta& meta);

// The stream format announcing `caps` (the string rdmasrc will output) with
// `planes` (empty for opaque caps) and frames of up to `max_frame_size`
// bytes, with room for kDefaultSideDataBytes of side data per frame (less
// only where the largest slot has no more). Throws UserError when the caps
// string is too long for the wire.
StreamFormat stream_format(const std::string& caps, const PlaneSet& planes, std::uint32_t max_frame_size,
                                 std::uint16_t id);

// The size a format change should announce for an opaque frame of `size`
// bytes: rounded up to a power of two (at least 64 KiB), so frames of an
// encoded stream that grow a little do not re-announce the format each time.
std::uint32_t opaque_frame_budget(std::size_t size);

} // namespace rdmastream::gst
