// SPDX-License-Identifier: LGPL-2.1-or-later
#include "frame_payload.hpp"

#include "rdmastream_cli/plane_geometry.hpp"

extern "C" {
#include <libavutil/imgutils.h>
#include <libswscale/swscale.h>
}

#include <algorithm>
#include <stdexcept>

namespace rdmastream::cli {
namespace {

constexpr std::size_t kStrideAlign = 64;

std::array<std::uint8_t*, 4> plane_pointers(std::span<std::byte> chunk, const PayloadLayout& l) {
    std::array<std::uint8_t*, 4> p{};
    for (std::size_t i = 0; i < l.plane_count; ++i) {
        p[i] = reinterpret_cast<std::uint8_t*>(chunk.data()) + l.planes[i].offset;
    }
    return p;
}

std::array<int, 4> strides(const PayloadLayout& l) {
    std::array<int, 4> s{};
    for (std::size_t i = 0; i < l.plane_count; ++i) s[i] = static_cast<int>(l.planes[i].stride);
    return s;
}

} // namespace

bool same_layout(const PayloadLayout& a, const PayloadLayout& b) noexcept {
    if (a.format != b.format || a.width != b.width || a.height != b.height || a.plane_count != b.plane_count ||
        a.size != b.size) {
        return false;
    }
    for (std::size_t i = 0; i < a.plane_count; ++i) {
        if (a.planes[i].offset != b.planes[i].offset || a.planes[i].stride != b.planes[i].stride) return false;
    }
    return true;
}

std::optional<Payload> payload_in_place(const AVFrame& f, std::span<const std::byte> chunk,
                                        const FrameMemory& memory) {
    const auto fmt = static_cast<AVPixelFormat>(f.format);
    const FrameGeometry g = frame_geometry(fmt, f.width, f.height);
    const auto* lowest = reinterpret_cast<const std::byte*>(f.data[0]);
    for (int i = 0; i < g.plane_count; ++i) {
        const auto idx = static_cast<std::size_t>(i);
        if (f.data[idx] == nullptr || f.linesize[idx] <= 0) return std::nullopt;
        lowest = std::min(lowest, reinterpret_cast<const std::byte*>(f.data[idx]));
    }
    if (lowest < chunk.data()) return std::nullopt;
    Payload p;
    p.memory = &memory;
    p.layout.format = fmt;
    p.layout.width = f.width;
    p.layout.height = f.height;
    p.layout.plane_count = static_cast<std::uint8_t>(g.plane_count);
    std::size_t end = 0;
    for (int i = 0; i < g.plane_count; ++i) {
        const auto idx = static_cast<std::size_t>(i);
        const auto offset = static_cast<std::size_t>(reinterpret_cast<const std::byte*>(f.data[idx]) - lowest);
        const auto stride = static_cast<std::size_t>(f.linesize[idx]);
        const PlaneGeometry& pg = g.planes[idx];
        end = std::max(end, offset + stride * static_cast<std::size_t>(pg.rows - 1) + pg.row_bytes);
        p.layout.planes[idx] = PlaneLayout{static_cast<std::uint32_t>(offset), static_cast<std::uint32_t>(stride)};
    }
    if (lowest + end > chunk.data() + chunk.size()) return std::nullopt;
    p.layout.size = static_cast<std::uint32_t>(end);
    p.bytes = std::span<const std::byte>(lowest, end);
    return p;
}

PayloadLayout written_layout(AVPixelFormat format, int width, int height) {
    const FrameGeometry g = frame_geometry(format, width, height);
    PayloadLayout l;
    l.format = format;
    l.width = width;
    l.height = height;
    l.plane_count = static_cast<std::uint8_t>(g.plane_count);
    std::size_t at = 0;
    for (int i = 0; i < g.plane_count; ++i) {
        const auto idx = static_cast<std::size_t>(i);
        const std::size_t stride = (g.planes[idx].row_bytes + kStrideAlign - 1) / kStrideAlign * kStrideAlign;
        l.planes[idx] = PlaneLayout{static_cast<std::uint32_t>(at), static_cast<std::uint32_t>(stride)};
        at += stride * static_cast<std::size_t>(g.planes[idx].rows);
    }
    l.size = static_cast<std::uint32_t>(at);
    return l;
}

void copy_picture(const AVFrame& f, std::span<std::byte> chunk, const PayloadLayout& layout) {
    auto dst = plane_pointers(chunk, layout);
    auto dst_stride = strides(layout); // av_image_copy takes it non-const
    std::array<const std::uint8_t*, 4> src{f.data[0], f.data[1], f.data[2], f.data[3]};
    av_image_copy(dst.data(), dst_stride.data(), src.data(), f.linesize, layout.format, f.width, f.height);
}

void convert_picture(SwsContext* sws, const AVFrame& f, std::span<std::byte> chunk, const PayloadLayout& layout) {
    auto dst = plane_pointers(chunk, layout);
    const auto dst_stride = strides(layout);
    const int rows = sws_scale(sws, f.data, f.linesize, 0, f.height, dst.data(), dst_stride.data());
    if (rows <= 0) {
        throw std::runtime_error("sws_scale converted no rows");
    }
}

} // namespace rdmastream::cli
