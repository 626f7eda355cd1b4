// SPDX-License-Identifier: LGPL-2.1-or-later
// Per-frame side data (rdmastream/side_data.hpp) in GStreamer's terms, and
// back: the SMPTE 12M word of a GstVideoTimeCode, the ST 2086 and content
// light bytes of GstVideoMasteringDisplayInfo and GstVideoContentLightLevel.
// Pure functions, no RDMA, no allocation: the unit tests drive them
// natively; rdmasink_sidedata and side_data_metas.hpp use them per frame.
// docs/protocol.md ("Side data") is the wire side.
#pragma once

#include <gst/video/video.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace rdmastream::gst {

// A timecode as the 12M word holds it: BCD digits, so each field is only
// what its bits can spell; unpack_timecode checks them against real ranges.
struct Timecode {
    guint hours = 0;
    guint minutes = 0;
    guint seconds = 0;
    guint frames = 0;
    bool drop_frame = false;
};

// The packed word of av_timecode_get_smpte(): hh:mm:ss:ff in BCD and bit 30
// for drop frame. Above 30 fps the word counts frame pairs and the odd
// frame of a pair sets the field bit (bit 7 at 50 fps, else bit 23), as
// FFmpeg does, since two BCD digits of frame tens cannot spell 59. The
// other flag bits are 0. nullopt when the timecode does not fit the word
// (hours from 24, minutes or seconds from 60, a frame count, in pairs
// above 30 fps, from 40).
std::optional<std::uint32_t> pack_timecode(const Timecode& tc, guint fps_n, guint fps_d) noexcept;

// The word's timecode at fps_n/fps_d (the stream's framerate): nullopt if
// a digit is out of its range, or the frame is not below the framerate.
// Flag bits but drop frame and, above 30 fps, the field bit are ignored.
std::optional<Timecode> unpack_timecode(std::uint32_t word, guint fps_n, guint fps_d) noexcept;

// The 24 bytes of kMasteringDisplay and the 4 of kContentLight: the same
// fields in the same units as GStreamer's structs, little-endian.
using MasteringBytes = std::array<std::byte, 24>;
using ContentLightBytes = std::array<std::byte, 4>;
MasteringBytes encode_mastering(const GstVideoMasteringDisplayInfo& info) noexcept;
GstVideoMasteringDisplayInfo decode_mastering(std::span<const std::byte, 24> bytes) noexcept;
ContentLightBytes encode_content_light(const GstVideoContentLightLevel& level) noexcept;
GstVideoContentLightLevel decode_content_light(std::span<const std::byte, 4> bytes) noexcept;

// Little-endian u32, as the wire holds the 12M words.
std::array<std::byte, 4> le32(std::uint32_t v) noexcept;
std::uint32_t read_le32(std::span<const std::byte> b) noexcept; // at least 4 bytes

} // namespace rdmastream::gst
