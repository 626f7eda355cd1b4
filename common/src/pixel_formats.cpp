// SPDX-License-Identifier: LGPL-2.1-or-later
// One table, read both ways. Full-range "J" formats map to the same
// GStreamer name as their limited-range twins: the bytes are laid out the
// same, the range belongs in colorimetry. The way back gives the non-J one.
#include "rdmastream_cli/pixel_formats.hpp"

#include <array>
#include <utility>

namespace rdmastream::cli {
namespace {

struct Pair {
    AVPixelFormat av;
    std::string_view gst;
};

// Little-endian host assumed, as everywhere in rdmastream (the wire is LE).
constexpr std::array kTable = {
    Pair{AV_PIX_FMT_YUV420P, "I420"},         Pair{AV_PIX_FMT_YUV422P, "Y42B"},
    Pair{AV_PIX_FMT_YUV444P, "Y444"},         Pair{AV_PIX_FMT_YUV411P, "Y41B"},
    Pair{AV_PIX_FMT_YUV410P, "YUV9"},         Pair{AV_PIX_FMT_YUVA420P, "A420"},
    Pair{AV_PIX_FMT_NV12, "NV12"},            Pair{AV_PIX_FMT_NV21, "NV21"},
    Pair{AV_PIX_FMT_NV16, "NV16"},            Pair{AV_PIX_FMT_NV24, "NV24"},
    Pair{AV_PIX_FMT_YUYV422, "YUY2"},         Pair{AV_PIX_FMT_UYVY422, "UYVY"},
    Pair{AV_PIX_FMT_YVYU422, "YVYU"},         Pair{AV_PIX_FMT_GRAY8, "GRAY8"},
    Pair{AV_PIX_FMT_GRAY16LE, "GRAY16_LE"},   Pair{AV_PIX_FMT_GRAY16BE, "GRAY16_BE"},
    Pair{AV_PIX_FMT_RGB24, "RGB"},            Pair{AV_PIX_FMT_BGR24, "BGR"},
    Pair{AV_PIX_FMT_RGBA, "RGBA"},            Pair{AV_PIX_FMT_BGRA, "BGRA"},
    Pair{AV_PIX_FMT_ARGB, "ARGB"},            Pair{AV_PIX_FMT_ABGR, "ABGR"},
    Pair{AV_PIX_FMT_RGB0, "RGBx"},            Pair{AV_PIX_FMT_BGR0, "BGRx"},
    Pair{AV_PIX_FMT_0RGB, "xRGB"},            Pair{AV_PIX_FMT_0BGR, "xBGR"},
    Pair{AV_PIX_FMT_RGB565LE, "RGB16"},       Pair{AV_PIX_FMT_BGR565LE, "BGR16"},
    Pair{AV_PIX_FMT_RGB555LE, "RGB15"},       Pair{AV_PIX_FMT_BGR555LE, "BGR15"},
    Pair{AV_PIX_FMT_GBRP, "GBR"},             Pair{AV_PIX_FMT_GBRAP, "GBRA"},
    Pair{AV_PIX_FMT_GBRP10LE, "GBR_10LE"},    Pair{AV_PIX_FMT_GBRP12LE, "GBR_12LE"},
    Pair{AV_PIX_FMT_GBRAP10LE, "GBRA_10LE"},  Pair{AV_PIX_FMT_GBRAP12LE, "GBRA_12LE"},
    Pair{AV_PIX_FMT_YUV420P10LE, "I420_10LE"}, Pair{AV_PIX_FMT_YUV420P12LE, "I420_12LE"},
    Pair{AV_PIX_FMT_YUV422P10LE, "I422_10LE"}, Pair{AV_PIX_FMT_YUV422P12LE, "I422_12LE"},
    Pair{AV_PIX_FMT_YUV444P10LE, "Y444_10LE"}, Pair{AV_PIX_FMT_YUV444P12LE, "Y444_12LE"},
    Pair{AV_PIX_FMT_YUV444P16LE, "Y444_16LE"}, Pair{AV_PIX_FMT_YUVA420P10LE, "A420_10LE"},
    Pair{AV_PIX_FMT_YUVA422P10LE, "A422_10LE"}, Pair{AV_PIX_FMT_YUVA444P10LE, "A444_10LE"},
    Pair{AV_PIX_FMT_P010LE, "P010_10LE"},     Pair{AV_PIX_FMT_P016LE, "P016_LE"},
    Pair{AV_PIX_FMT_RGBA64LE, "RGBA64_LE"},   Pair{AV_PIX_FMT_BGRA64LE, "BGRA64_LE"},
    Pair{AV_PIX_FMT_AYUV64LE, "AYUV64"},
    // One-way: full range, same layout.
    Pair{AV_PIX_FMT_YUVJ420P, "I420"},        Pair{AV_PIX_FMT_YUVJ422P, "Y42B"},
    Pair{AV_PIX_FMT_YUVJ444P, "Y444"},
};

} // namespace

std::optional<std::string_view> gst_format_name(AVPixelFormat fmt) noexcept {
    for (const Pair& p : kTable) {
        if (p.av == fmt) return p.gst;
    }
    return std::nullopt;
}

AVPixelFormat av_pixel_format(std::string_view gst_name) noexcept {
    for (const Pair& p : kTable) { // first match: the non-J format
        if (p.gst == gst_name) return p.av;
    }
    return AV_PIX_FMT_NONE;
}

} // namespace rdmastream::cli
