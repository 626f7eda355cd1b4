// SPDX-License-Identifier: LGPL-2.1-or-later
// How the frames of a stream look, as the sender announces it. The
// transport does not interpret the caps (a GStreamer caps string, e.g.
// "video/x-raw,format=I420,width=1920,height=1080,framerate=60/1"), only
// carries and checks them; the plane layout says where each plane of a raw
// video frame starts in the payload and its stride, so no side has to guess
// alignment. A receiver refuses a format outside the limits below.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace rdmastream {

// Every ring slot starts with a header of this size; the payload follows.
inline constexpr std::uint32_t kSlotHeaderBytes = 64;
// The largest slot a receiver accepts (header included).
inline constexpr std::uint64_t kMaxSlotBytes = 1ull << 30;

struct PlaneLayout {
    std::uint32_t offset = 0;
    std::uint32_t stride = 0;
};
inline constexpr std::size_t kMaxPlanes = 4;
inline constexpr std::size_t kMaxCapsLength = 900;
// Brackets ((), [], {}, <>) in the caps nest at most this deep: GStreamer's
// caps parser takes time and memory exponential in the nesting of
// structures (1.22: 20 levels of "[", 175 bytes, 18 s and 175 MB).
inline constexpr std::size_t kMaxCapsNesting = 8;

// Flows a stream carries at most (flow ids 0..kMaxFlows-1): one per
// essence of a programme (video, audio, data), each with its own format,
// ring slots, credits and frame numbers, all on the stream's one clock.
// Flow 0 is the first (what a one-flow stream carries).
inline constexpr std::size_t kMaxFlows = 15;

struct StreamFormat {
    std::uint16_t id = 0;              // non-zero, changes with every new format
    std::uint32_t max_frame_size = 0;  // payload bytes a frame may need
    // Side data bytes (side_data.hpp) a frame may carry after its payload,
    // entry heads included; 0: none. At most kMaxSideDataBytes; the
    // receiver's slots make room for max_frame_size + max_side_data.
    std::uint32_t max_side_data = 0;
    std::array<PlaneLayout, kMaxPlanes> planes{};
    std::uint8_t plane_count = 0;
    std::string caps;
    // The flow these frames are (0..kMaxFlows-1). A flow exists once its
    // first format is announced; formats and ids are per flow.
    std::uint8_t flow = 0;
};

} // namespace rdmastream
