// SPDX-License-Identifier: LGPL-2.1-or-later
#include "rdmastream_gst/side_data_bytes.hpp"

#include <algorithm>

namespace rdmastream::gst {

namespace {

// Above 30 fps a 12M word counts frame pairs (SMPTE ST 12-1 section 12.1).
bool frame_pairs(guint fps_n, guint fps_d) noexcept {
    return std::uint64_t{fps_n} > std::uint64_t{30} * fps_d;
}

// The field bit that marks the second frame of a pair: FFmpeg's choice.
std::uint32_t field_bit(guint fps_n, guint fps_d) noexcept {
    return std::uint64_t{fps_n} == std::uint64_t{50} * fps_d ? 1u << 7 : 1u << 23;
}

void put16(std::byte* at, std::uint16_t v) noexcept {
    at[0] = static_cast<std::byte>(v & 0xff);
    at[1] = static_cast<std::byte>(v >> 8);
}

std::uint16_t get16(const std::byte* at) noexcept {
    return static_cast<std::uint16_t>(std::to_integer<unsigned>(at[0]) | std::to_integer<unsigned>(at[1]) << 8);
}

} // namespace

std::array<std::byte, 4> le32(std::uint32_t v) noexcept {
    return {static_cast<std::byte>(v & 0xff), static_cast<std::byte>((v >> 8) & 0xff),
            static_cast<std::byte>((v >> 16) & 0xff), static_cast<std::byte>(v >> 24)};
}

std::uint32_t read_le32(std::span<const std::byte> b) noexcept {
    return std::uint32_t{get16(b.data())} | std::uint32_t{get16(b.data() + 2)} << 16;
}

std::optional<std::uint32_t> pack_timecode(const Timecode& tc, guint fps_n, guint fps_d) noexcept {
    std::uint32_t word = 0;
    guint ff = tc.frames;
    if (frame_pairs(fps_n, fps_d)) {
        word |= (ff % 2) != 0 ? field_bit(fps_n, fps_d) : 0;
        ff /= 2;
    }
    if (tc.hours >= 24 || tc.minutes >= 60 || tc.seconds >= 60 || ff >= 40) {
        return std::nullopt;
    }
    word |= (tc.drop_frame ? 1u : 0u) << 30;
    word |= (ff / 10) << 28 | (ff % 10) << 24;
    word |= (tc.seconds / 10) << 20 | (tc.seconds % 10) << 16;
    word |= (tc.minutes / 10) << 12 | (tc.minutes % 10) << 8;
    word |= (tc.hours / 10) << 4 | (tc.hours % 10);
    return word;
}

std::optional<Timecode> unpack_timecode(std::uint32_t word, guint fps_n, guint fps_d) noexcept {
    if (fps_n == 0 || fps_d == 0) {
        return std::nullopt; // a variable framerate gives a frame number no meaning
    }
    const auto digits = [&](int units_at, int tens_at, std::uint32_t tens_mask) -> std::optional<guint> {
        const guint units = (word >> units_at) & 0xf;
        if (units > 9) {
            return std::nullopt; // not BCD
        }
        return ((word >> tens_at) & tens_mask) * 10 + units;
    };
    const auto hours = digits(0, 4, 0x3), minutes = digits(8, 12, 0x7), seconds = digits(16, 20, 0x7),
               frames = digits(24, 28, 0x3);
    if (!hours || !minutes || !seconds || !frames || *hours >= 24 || *minutes >= 60 || *seconds >= 60) {
        return std::nullopt;
    }
    Timecode tc{*hours, *minutes, *seconds, *frames, (word & (1u << 30)) != 0};
    if (frame_pairs(fps_n, fps_d)) {
        tc.frames = tc.frames * 2 + ((word & field_bit(fps_n, fps_d)) != 0 ? 1 : 0);
    }
    // Frames per second rounded up: 30 at 30000/1001, as GStreamer counts them.
    const std::uint64_t per_second = (std::uint64_t{fps_n} + fps_d - 1) / fps_d;
    if (tc.frames >= per_second) {
        return std::nullopt;
    }
    return tc;
}

MasteringBytes encode_mastering(const GstVideoMasteringDisplayInfo& info) noexcept {
    MasteringBytes b{};
    std::byte* at = b.data();
    for (const GstVideoMasteringDisplayInfoCoordinates& c : info.display_primaries) { // red, green, blue
        put16(at, c.x);
        put16(at + 2, c.y);
        at += 4;
    }
    put16(at, info.white_point.x);
    put16(at + 2, info.white_point.y);
    const auto max = le32(info.max_display_mastering_luminance), min = le32(info.min_display_mastering_luminance);
    std::copy(max.begin(), max.end(), at + 4);
    std::copy(min.begin(), min.end(), at + 8);
    return b;
}

GstVideoMasteringDisplayInfo decode_mastering(std::span<const std::byte, 24> bytes) noexcept {
    GstVideoMasteringDisplayInfo info;
    gst_video_mastering_display_info_init(&info);
    const std::byte* at = bytes.data();
    for (GstVideoMasteringDisplayInfoCoordinates& c : info.display_primaries) {
        c.x = get16(at);
        c.y = get16(at + 2);
        at += 4;
    }
    info.white_point.x = get16(at);
    info.white_point.y = get16(at + 2);
    info.max_display_mastering_luminance = read_le32(bytes.subspan(16, 4));
    info.min_display_mastering_luminance = read_le32(bytes.subspan(20, 4));
    return info;
}

ContentLightBytes encode_content_light(const GstVideoContentLightLevel& level) noexcept {
    ContentLightBytes b{};
    put16(b.data(), level.max_content_light_level);
    put16(b.data() + 2, level.max_frame_average_light_level);
    return b;
}

GstVideoContentLightLevel decode_content_light(std::span<const std::byte, 4> bytes) noexcept {
    GstVideoContentLightLevel level;
    gst_video_content_light_level_init(&level);
    level.max_content_light_level = get16(bytes.data());
    level.max_frame_average_light_level = get16(bytes.data() + 2);
    return level;
}

} // namespace rdmastream::gst
