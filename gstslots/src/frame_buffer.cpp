// SPDX-License-Identifier: LGPL-2.1-or-later
#include "rdmastream_gst/frame_buffer.hpp"

#include "rdmastream/no_time.hpp"

#include <bit>
#include <iterator>

namespace rdmastream::gst {
namespace {

// GStreamer's flag for each wire bit, in wire bit order (frame.hpp).
constexpr GstBufferFlags kFlagBits[] = {GST_BUFFER_FLAG_DISCONT, GST_BUFFER_FLAG_DELTA_UNIT, GST_BUFFER_FLAG_HEADER,
                                        GST_BUFFER_FLAG_CORRUPTED};
static_assert(std::size(kFlagBits) == std::bit_width(unsigned{kFrameFlagsDefined}),
              "a buffer flag for every wire flag");

constexpr GstBufferFlags kTravelling = static_cast<GstBufferFlags>(
    GST_BUFFER_FLAG_DISCONT | GST_BUFFER_FLAG_DELTA_UNIT | GST_BUFFER_FLAG_HEADER | GST_BUFFER_FLAG_CORRUPTED);

} // namespace

std::uint16_t wire_flags(GstBufferFlags flags) noexcept {
    std::uint16_t out = 0;
    for (unsigned bit = 0; bit < std::size(kFlagBits); ++bit) {
        if ((flags & kFlagBits[bit]) != 0) {
            out = static_cast<std::uint16_t>(out | (1u << bit));
        }
    }
    return out;
}

GstBufferFlags buffer_flags(std::uint16_t wire_flags) noexcept {
    unsigned out = 0;
    for (unsigned bit = 0; bit < std::size(kFlagBits); ++bit) {
        if ((wire_flags & (1u << bit)) != 0) {
            out |= kFlagBits[bit];
        }
    }
    return static_cast<GstBufferFlags>(out);
}

std::int64_t wire_time(GstClockTime t) noexcept {
    return GST_CLOCK_TIME_IS_VALID(t) ? static_cast<std::int64_t>(t) : kNoTime;
}

GstClockTime clock_time(std::int64_t wire) noexcept {
    return wire < 0 ? GST_CLOCK_TIME_NONE : static_cast<GstClockTime>(wire);
}

void stamp_frame_buffer(GstBuffer* buffer, const FrameHeader& header, GstClockTime origin) noexcept {
    const GstClockTime pts = clock_time(header.pts);
    GST_BUFFER_PTS(buffer) = !GST_CLOCK_TIME_IS_VALID(pts) ? GST_CLOCK_TIME_NONE : pts > origin ? pts - origin : 0;
    GST_BUFFER_DURATION(buffer) = clock_time(header.duration);
    // Exactly the sender's, whatever the buffer carried before.
    GST_BUFFER_FLAG_UNSET(buffer, kTravelling);
    GST_BUFFER_FLAG_SET(buffer, buffer_flags(header.flags));
    GST_BUFFER_OFFSET(buffer) = header.sequence;
}

} // namespace rdmastream::gst
