// SPDX-License-Identifier: LGPL-2.1-or-later
#include "framemd5_sink.hpp"

#include "rdmastream/error.hpp"
#include "rdmastream/no_time.hpp"

extern "C" {
#include <libavformat/avformat.h>
#include <libavformat/version.h>
#include <libavutil/pixdesc.h>
}

#include <fmt/format.h>

#include <cinttypes>
#include <cstring>

namespace rdmastream::cli {
namespace {
constexpr AVRational kNanoseconds{1, 1000000000};

std::int64_t to_tb(std::int64_t ns, AVRational tb) {
    return ns == kNoTime ? AV_NOPTS_VALUE : av_rescale_q(ns, kNanoseconds, tb);
}
} // namespace

FrameMd5Sink::FrameMd5Sink(const std::string& path) : path_(path), md5_(av_md5_alloc()) {
    out_.reset(path == "-" ? stdout : std::fopen(path.c_str(), "w"));
    if (!out_) {
        throw UserError(fmt::format("cannot write --framemd5 {}: {}: check the folder exists and is writable", path,
                                    std::strerror(errno)));
    }
    if (!md5_) throw std::bad_alloc();
}

void FrameMd5Sink::start_format(const StreamLayout& stream) {
    stream_ = &stream;
    const RawVideoCaps& caps = stream.caps;
    if (header_written_) {
        return; // as ffmpeg -autoscale 0: one header, the frames change size
    }
    // ffmpeg's encoder time base for video: 1/frame rate, 1/25 when unknown.
    if (caps.framerate.num > 0 && caps.framerate.den > 0) time_base_ = av_inv_q(caps.framerate);
    std::fprintf(out_.get(), "#format: frame checksums\n#version: 2\n#hash: MD5\n#software: %s\n", LIBAVFORMAT_IDENT);
    std::fprintf(out_.get(), "#tb 0: %d/%d\n#media_type 0: video\n#codec_id 0: rawvideo\n", time_base_.num,
                 time_base_.den);
    std::fprintf(out_.get(), "#dimensions 0: %dx%d\n#sar 0: %d/%d\n", caps.width, caps.height,
                 caps.pixel_aspect_ratio.num, caps.pixel_aspect_ratio.num ? caps.pixel_aspect_ratio.den : 1);
    std::fprintf(out_.get(), "#stream#, dts,        pts, duration,     size, hash\n");
    header_written_ = true;
}

bool FrameMd5Sink::consume(const ReceivedFrame& frame) {
    av_md5_init(md5_.get());
    const auto* base = reinterpret_cast<const std::uint8_t*>(frame.payload.data());
    const FrameGeometry& geometry = stream_->geometry;
    for (int i = 0; i < geometry.plane_count; ++i) {
        const PlaneGeometry& g = geometry.planes[static_cast<std::size_t>(i)];
        const gst::PlaneExtent& p = stream_->layout.plane(static_cast<unsigned>(i));
        const std::size_t offset = p.offset, stride = p.stride;
        for (int r = 0; r < g.rows; ++r) {
            av_md5_update(md5_.get(), base + offset + stride * static_cast<std::size_t>(r), g.row_bytes);
        }
    }
    std::uint8_t digest[16];
    av_md5_final(md5_.get(), digest);
    const std::int64_t pts = to_tb(frame.header.pts, time_base_);
    const std::int64_t duration =
        frame.header.duration == kNoTime ? 0 : to_tb(frame.header.duration, time_base_);
    std::fprintf(out_.get(), "%d, %10" PRId64 ", %10" PRId64 ", %8" PRId64 ", %8d, ", 0, pts, pts, duration,
                 static_cast<int>(geometry.packed_size));
    for (const std::uint8_t b : digest) std::fprintf(out_.get(), "%02x", b);
    std::fputc('\n', out_.get());
    return true;
}

void FrameMd5Sink::finish() {
    if (std::fflush(out_.get()) != 0) {
        throw UserError(fmt::format("writing --framemd5 {} failed: {}", path_, std::strerror(errno)));
    }
}

} // namespace rdmastream::cli
