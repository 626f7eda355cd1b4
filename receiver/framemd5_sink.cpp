// SPDX-License-Identifier: LGPL-2.1-or-later
#include "framemd5_sink.hpp"
#include "rdmastream_cli/av_time.hpp"

#include "rdmastream/error.hpp"
#include "rdmastream/no_time.hpp"

extern "C" {
#include <libavformat/avformat.h>
#include <libavformat/version.h>
#include <libavutil/channel_layout.h>
#include <libavutil/mathematics.h>
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

void FrameMd5Sink::start_programme(std::uint16_t flows) {
    for (std::size_t i = 0; i < streams_.size(); ++i) {
        if (flows & (1u << i)) streams_[i].index = stream_count_++;
    }
}

bool FrameMd5Sink::takes(const StreamLayout& stream) { return streams_[stream.layout.format().flow].index >= 0; }

void FrameMd5Sink::start_format(const StreamLayout& layout) {
    const std::uint8_t flow = layout.layout.format().flow;
    Stream& s = streams_[flow];
    if (s.layout != nullptr && layout.audio != s.audio) {
        throw std::runtime_error(fmt::format("--framemd5 {}: flow {} changed from {} to {} mid-stream, and its "
                                             "stream in the file has one kind",
                                             path_, flow, s.audio ? "audio" : "video",
                                             layout.audio ? "audio" : "video"));
    }
    const bool first = s.layout == nullptr;
    s.layout = &layout;
    s.audio = layout.audio;
    if (layout.audio) {
        s.s16.configure(layout.audio_caps, AV_SAMPLE_FMT_S16, layout.layout.format().max_frame_size,
                        "--framemd5 " + path_);
    }
    // A new format keeps the first one's header, as ffmpeg -autoscale 0
    // does (its encoders keep their time base and pcm_s16le).
    if (!first) return;
    if (layout.audio) {
        s.time_base = AVRational{1, layout.audio_caps.rate};
    } else if (layout.caps.framerate.num > 0 && layout.caps.framerate.den > 0) {
        s.time_base = av_inv_q(layout.caps.framerate); // ffmpeg's encoder time base: 1/frame rate, 1/25 unknown
    }
}

void FrameMd5Sink::programme_ready() {
    std::fprintf(out_.get(), "#format: frame checksums\n#version: 2\n#hash: MD5\n#software: %s\n", LIBAVFORMAT_IDENT);
    for (const Stream& s : streams_) {
        if (s.index >= 0) write_stream_header(s);
    }
    std::fprintf(out_.get(), "#stream#, dts,        pts, duration,     size, hash\n");
}

// What libavformat's hashenc.c writes for each stream.
void FrameMd5Sink::write_stream_header(const Stream& s) {
    const int i = s.index;
    std::fprintf(out_.get(), "#tb %d: %d/%d\n", i, s.time_base.num, s.time_base.den);
    if (s.audio) {
        const RawAudioCaps& caps = s.layout->audio_caps;
        AVChannelLayout layout = av_channel_layout(caps.channel_mask, caps.channels);
        char name[256] = {};
        av_channel_layout_describe(&layout, name, sizeof name);
        av_channel_layout_uninit(&layout);
        std::fprintf(out_.get(), "#media_type %d: audio\n#codec_id %d: pcm_s16le\n", i, i);
        std::fprintf(out_.get(), "#sample_rate %d: %d\n#channel_layout_name %d: %s\n", i, caps.rate, i, name);
        return;
    }
    const RawVideoCaps& caps = s.layout->caps;
    std::fprintf(out_.get(), "#media_type %d: video\n#codec_id %d: rawvideo\n", i, i);
    std::fprintf(out_.get(), "#dimensions %d: %dx%d\n#sar %d: %d/%d\n", i, caps.width, caps.height, i,
                 caps.pixel_aspect_ratio.num, caps.pixel_aspect_ratio.num ? caps.pixel_aspect_ratio.den : 1);
}

void FrameMd5Sink::hash_audio(Stream& s, const ReceivedFrame& frame) {
    const std::span<const std::uint8_t> s16 = s.s16.convert(frame.payload);
    av_md5_init(md5_.get());
    av_md5_update(md5_.get(), s16.data(), s16.size());
    // The sender put the frame on its sample grid (rdmasend's
    // audio_frames.hpp): the nearest sample is exact. A rate change keeps
    // the first rate's time base, as ffmpeg's encoder does.
    queue_line(s, to_tb(frame.header.pts, s.time_base), s.layout->samples(frame.payload.size()),
               static_cast<int>(s16.size()));
}

void FrameMd5Sink::hash_video(const Stream& s, const ReceivedFrame& frame) {
    av_md5_init(md5_.get());
    const auto* base = reinterpret_cast<const std::uint8_t*>(frame.payload.data());
    const FrameGeometry& geometry = s.layout->geometry;
    for (int i = 0; i < geometry.plane_count; ++i) {
        const PlaneGeometry& g = geometry.planes[static_cast<std::size_t>(i)];
        const gst::PlaneExtent& p = s.layout->layout.plane(static_cast<unsigned>(i));
        const std::size_t offset = p.offset, stride = p.stride;
        for (int r = 0; r < g.rows; ++r) {
            av_md5_update(md5_.get(), base + offset + stride * static_cast<std::size_t>(r), g.row_bytes);
        }
    }
}

void FrameMd5Sink::queue_line(Stream& s, std::int64_t pts, std::int64_t duration, int size) {
    std::uint8_t digest[16];
    av_md5_final(md5_.get(), digest);
    // One stream written as it comes (no queue: nothing allocated per frame).
    Line one;
    Line& line = stream_count_ == 1 ? one : s.lines.emplace_back();
    line.pts = pts;
    // The stream's number goes in front as the line is written (write_lines).
    int n = std::snprintf(line.text.data(), line.text.size(), "%10" PRId64 ", %10" PRId64 ", %8" PRId64 ", %8d, ",
                          pts, pts, duration, size);
    for (const std::uint8_t b : digest) {
        n += std::snprintf(line.text.data() + n, line.text.size() - static_cast<std::size_t>(n), "%02x", b);
    }
    if (&line == &one) {
        std::fprintf(out_.get(), "%d, %s\n", s.index, line.text.data());
    } else {
        write_lines(false);
    }
}

void FrameMd5Sink::write_lines(bool all) {
    for (;;) {
        Stream* earliest = nullptr;
        for (Stream& s : streams_) { // in stream order: the lower stream wins a tie
            if (s.index < 0) continue;
            if (s.lines.empty()) {
                if (all) continue;
                return; // a stream with nothing waiting may still have an earlier line to come
            }
            if (earliest == nullptr || av_compare_ts(s.lines.front().pts, s.time_base, earliest->lines.front().pts,
                                                     earliest->time_base) < 0) {
                earliest = &s;
            }
        }
        if (earliest == nullptr) return;
        std::fprintf(out_.get(), "%d, %s\n", earliest->index, earliest->lines.front().text.data());
        earliest->lines.pop_front();
    }
}

bool FrameMd5Sink::consume(const ReceivedFrame& frame) {
    Stream& s = streams_[frame.header.flow];
    if (s.audio) {
        hash_audio(s, frame);
        return true;
    }
    hash_video(s, frame);
    const std::int64_t pts = to_tb(frame.header.pts, s.time_base);
    const std::int64_t duration = frame.header.duration == kNoTime ? 0 : to_tb(frame.header.duration, s.time_base);
    queue_line(s, pts, duration, static_cast<int>(s.layout->geometry.packed_size));
    return true;
}

void FrameMd5Sink::finish() {
    write_lines(true);
    if (std::fflush(out_.get()) != 0) {
        throw UserError(fmt::format("writing --framemd5 {} failed: {}", path_, std::strerror(errno)));
    }
}

} // namespace rdmastream::cli
