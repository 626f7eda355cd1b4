// SPDX-License-Identifier: LGPL-2.1-or-later
// Per-frame data: what a source attaches to one video frame (captions,
// timecode, HDR metadata). It travels in the frame's own RDMA write, after
// the payload, so it arrives with its frame or not at all (never paired up
// later by time). Each kind's bytes are the form both FFmpeg and GStreamer
// can give and take without loss; a receiver checks every entry's kind and
// size before a program sees it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace rdmastream {

enum class SideDataKind : std::uint16_t {
    // CEA-708 cc_data: triplets (marker|cc_valid|cc_type, byte 1, byte 2),
    // as AV_FRAME_DATA_A53_CC and GstVideoCaptionMeta (CEA708_RAW) hold them.
    // A whole number of triplets, at least one.
    kCaptions = 1,
    // SMPTE ST 12-1 timecodes: 1 to 3 little-endian 32-bit words in the
    // packed form of AV_FRAME_DATA_S12M_TIMECODE (its words after the count;
    // av_timecode_get_smpte() makes one).
    kTimecode = 2,
    // SMPTE ST 2086 mastering display, 24 bytes, little-endian: the red,
    // green and blue primaries and the white point as (x, y) u16 pairs in
    // units of 0.00002, then the largest and smallest luminance as u32 in
    // units of 0.0001 cd/m² (GstVideoMasteringDisplayInfo's units;
    // AV_FRAME_DATA_MASTERING_DISPLAY_METADATA's rationals over 50000 and 10000).
    kMasteringDisplay = 3,
    // Content light level, 4 bytes: max_cll and max_fall, little-endian u16
    // in cd/m² (AV_FRAME_DATA_CONTENT_LIGHT_LEVEL, GstVideoContentLightLevel).
    kContentLight = 4,
};
// "captions", "timecode", "mastering display", "content light"; "unknown".
const char* name(SideDataKind kind) noexcept;

// One entry. A sender's bytes are copied at send() (they need not be in
// registered memory and may change after it); a receiver's lie in its ring,
// valid until the frame's slot is released.
struct SideData {
    SideDataKind kind = SideDataKind::kCaptions;
    std::span<const std::byte> bytes;
};

// A frame carries at most this many entries, each kind at most once.
inline constexpr std::size_t kMaxSideDataEntries = 4;
// Side data bytes per frame (entries with their 4-byte heads) a format may
// declare (StreamFormat::max_side_data), and what senders declare unless
// told otherwise.
inline constexpr std::uint32_t kMaxSideDataBytes = 65536;
inline constexpr std::uint32_t kDefaultSideDataBytes = 4096;
// An entry's head on the wire: kind, length (u16 each).
inline constexpr std::size_t kSideDataEntryHead = 4;

} // namespace rdmastream
