// SPDX-License-Identifier: LGPL-2.1-or-later
// Where a picture's bytes are, as the wire describes them: one contiguous
// payload in registered memory, each plane's offset in it and its stride.
//
// Three ways a picture becomes a payload: in place (the decoder wrote it
// into a registered chunk: nothing moves), copied into a registered chunk
// (the fallback), or converted by libswscale into one (--pix-fmt).
#pragma once

#include "rdmastream/format.hpp"
#include "rdmastream/memory.hpp"

extern "C" {
#include <libavutil/frame.h>
#include <libavutil/pixfmt.h>
}

#include <array>
#include <cstdint>
#include <optional>
#include <span>

struct SwsContext;

namespace rdmastream::cli {

struct PayloadLayout {
    AVPixelFormat format = AV_PIX_FMT_NONE;
    int width = 0;
    int height = 0;
    std::array<PlaneLayout, kMaxPlanes> planes{};
    std::uint8_t plane_count = 0;
    std::uint32_t size = 0; // payload bytes
};
bool same_layout(const PayloadLayout& a, const PayloadLayout& b) noexcept;

struct Payload {
    std::span<const std::byte> bytes;
    const FrameMemory* memory = nullptr; // where `bytes` lie: what the send names
    PayloadLayout layout;
};

// `f` as it lies in `chunk`: from its lowest plane to the last visible byte
// of its last row. nullopt when a plane is outside the chunk or flipped.
std::optional<Payload> payload_in_place(const AVFrame& f, std::span<const std::byte> chunk,
                                        const FrameMemory& memory);

// The layout rdmasend gives a picture it writes itself: planes one after
// another, strides rounded up to 64 bytes (what SIMD code and GStreamer
// like).
PayloadLayout written_layout(AVPixelFormat format, int width, int height);

// Copies the visible picture of `f` into `chunk` laid out as `layout` (same
// format and size as `f`).
void copy_picture(const AVFrame& f, std::span<std::byte> chunk, const PayloadLayout& layout);
// Converts `f` into `chunk` laid out as `layout` (another pixel format).
void convert_picture(SwsContext* sws, const AVFrame& f, std::span<std::byte> chunk, const PayloadLayout& layout);

} // namespace rdmastream::cli
