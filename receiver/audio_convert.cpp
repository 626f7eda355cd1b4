// SPDX-License-Identifier: LGPL-2.1-or-later
#include "audio_convert.hpp"

#include "rdmastream_cli/av_error.hpp"

#include <fmt/format.h>

#include <cstring>
#include <stdexcept>

namespace rdmastream::cli {

AudioPlanes audio_planes(const RawAudioCaps& caps, std::span<const std::byte> payload) noexcept {
    AudioPlanes p;
    const auto* base = reinterpret_cast<const std::uint8_t*>(payload.data());
    p.samples = static_cast<int>(payload.size() / static_cast<std::size_t>(sample_frame_bytes(caps)));
    if (!av_sample_fmt_is_planar(caps.format)) {
        p.data[0] = base;
        return p;
    }
    const std::size_t plane = payload.size() / static_cast<std::size_t>(caps.channels);
    for (int c = 0; c < caps.channels; ++c) p.data[c] = base + plane * static_cast<std::size_t>(c);
    return p;
}

void AudioConverter::configure(const RawAudioCaps& in, AVSampleFormat out_format, std::size_t max_frame_bytes,
                               const std::string& who) {
    in_ = in;
    out_format_ = out_format;
    who_ = who;
    const std::size_t max_samples = max_frame_bytes / static_cast<std::size_t>(sample_frame_bytes(in));
    out_.resize(max_samples * static_cast<std::size_t>(in.channels) *
                static_cast<std::size_t>(av_get_bytes_per_sample(out_format)));
    interleave_only_ = av_sample_fmt_is_planar(in.format) && out_format == av_get_packed_sample_fmt(in.format);
    if (interleave_only_) {
        swr_.reset();
        return;
    }
    AVChannelLayout layout = av_channel_layout(in.channel_mask, in.channels);
    SwrContext* raw = nullptr;
    int rc = swr_alloc_set_opts2(&raw, &layout, out_format, in.rate, &layout, in.format, in.rate, 0, nullptr);
    av_channel_layout_uninit(&layout);
    swr_.reset(raw);
    if (rc >= 0) rc = swr_init(swr_.get());
    if (rc < 0) {
        throw std::runtime_error(fmt::format("{}: libswresample cannot convert {} audio of {} channels to {}: {}", who,
                                             av_get_sample_fmt_name(in.format), in.channels,
                                             av_get_sample_fmt_name(out_format), av_error_text(rc)));
    }
}

std::span<const std::uint8_t> AudioConverter::convert(std::span<const std::byte> payload) {
    AudioPlanes in = audio_planes(in_, payload); // within the format's max_frame_size: StreamLayout::check_frame
    if (interleave_only_) {
        const auto bytes = static_cast<std::size_t>(av_get_bytes_per_sample(out_format_));
        const auto channels = static_cast<std::size_t>(in_.channels);
        std::uint8_t* to = out_.data();
        for (std::size_t i = 0; i < static_cast<std::size_t>(in.samples); ++i) {
            for (std::size_t c = 0; c < channels; ++c, to += bytes) std::memcpy(to, in.data[c] + i * bytes, bytes);
        }
        return {out_.data(), static_cast<std::size_t>(to - out_.data())};
    }
    std::uint8_t* out[1] = {out_.data()};
    const int n = swr_convert(swr_.get(), out, in.samples, in.data, in.samples);
    if (n < 0) throw std::runtime_error(fmt::format("{}: swr_convert failed: {}", who_, av_error_text(n)));
    return {out_.data(), static_cast<std::size_t>(n) * static_cast<std::size_t>(in_.channels) *
                             static_cast<std::size_t>(av_get_bytes_per_sample(out_format_))};
}

} // namespace rdmastream::cli
