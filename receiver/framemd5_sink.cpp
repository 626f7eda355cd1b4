// SPDX-License-Identifier: LGPL-2.1-or-later
#include "framemd5_sink.hpp"
#include "rdmastream_cli/av_time.hpp"

#include "rdmastream/error.hpp"
#include "rdmastream/no_time.hpp"

extern "C" {
#include <libavformat/avformat.h>
#include <libavformat/version.h>
#include <libavutil/channel_layout.h>
#include <libavutil/pixdesc.h>
}

#include <fmt/format.h>

#include <cinttypes>
#include <cstring>

namespace rdmastream::cli {
namespace {

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
    if (header_written_ && stream.audio != audio_) {
        throw std::runtime_error(fmt::format("--framemd5 {}: the stream changed from {} to {} mid-stream, and the "
                                             "file has one stream",
                                             path_, audio_ ? "audio" : "video", stream.audio ? "audio" : "video"));
    }
    stream_ = &stream;
    if (stream.audio) {
        s16_.configure(stream.audio_caps, AV_SAMPLE_FMT_S16, stream.layout.format().max_frame_size,
                       "--framemd5 " + path_);
        if (!header_written_) write_audio_header(stream.audio_caps);
        return; // a new format: ffmpeg's header stays too (its encoder keeps pcm_s16le)
    }
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

void FrameMd5Sink::write_audio_header(const RawAudioCaps& caps) {
    // What libavformat's hashenc.c writes for an audio stream.
    time_base_ = AVRational{1, caps.rate};
    AVChannelLayout layout = av_channel_layout(caps.channel_mask, caps.channels);
    char name[256] = {};
    av_channel_layout_describe(&layout, name, sizeof name);
    av_channel_layout_uninit(&layout);
    std::fprintf(out_.get(), "#format: frame checksums\n#version: 2\n#hash: MD5\n#software: %s\n", LIBAVFORMAT_IDENT);
    std::fprintf(out_.get(), "#tb 0: %d/%d\n#media_type 0: audio\n#codec_id 0: pcm_s16le\n", time_base_.num,
                 time_base_.den);
    std::fprintf(out_.get(), "#sample_rate 0: %d\n#channel_layout_name 0: %s\n", caps.rate, name);
    std::fprintf(out_.get(), "#stream#, dts,        pts, duration,     size, hash\n");
    header_written_ = true;
    audio_ = true;
}

void FrameMd5Sink::hash_audio(const ReceivedFrame& frame) {
    const std::span<const std::uint8_t> s16 = s16_.convert(frame.payload);
    av_md5_init(md5_.get());
    av_md5_update(md5_.get(), s16.data(), s16.size());
    // The sender put the frame on its sample grid (rdmasend's
    // audio_frames.hpp): the nearest sample is exact. A rate change keeps
    // the first rate's time base, as ffmpeg's encoder does.
    const std::int64_t pts = to_tb(frame.header.pts, time_base_);
    write_line(pts, stream_->samples(frame.payload.size()), static_cast<int>(s16.size()));
}

void FrameMd5Sink::write_line(std::int64_t pts, std::int64_t duration, int size) {
    std::uint8_t digest[16];
    av_md5_final(md5_.get(), digest);
    std::fprintf(out_.get(), "%d, %10" PRId64 ", %10" PRId64 ", %8" PRId64 ", %8d, ", 0, pts, pts, duration, size);
    for (const std::uint8_t b : digest) std::fprintf(out_.get(), "%02x", b);
    std::fputc('\n', out_.get());
}

bool FrameMd5Sink::consume(const ReceivedFrame& frame) {
    if (audio_) {
        hash_audio(frame);
        return true;
    }
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
    const std::int64_t pts = to_tb(frame.header.pts, time_base_);
    const std::int64_t duration =
        frame.header.duration == kNoTime ? 0 : to_tb(frame.header.duration, time_base_);
    write_line(pts, duration, static_cast<int>(geometry.packed_size));
    return true;
}

void FrameMd5Sink::finish() {
    if (std::fflush(out_.get()) != 0) {
        throw UserError(fmt::format("writing --framemd5 {} failed: {}", path_, std::strerror(errno)));
    }
}

} // namespace rdmastream::cli
