// SPDX-License-Identifier: LGPL-2.1-or-later
#include "audio_frames.hpp"
#include "rdmastream_cli/av_time.hpp"

#include "rdmastream/no_time.hpp"

extern "C" {
#include <libavutil/avutil.h>
#include <libavutil/mathematics.h>
}

#include <cstring>

namespace rdmastream::cli {
RawAudioCaps audio_caps_of(const AVFrame& f) {
    RawAudioCaps caps;
    caps.format = static_cast<AVSampleFormat>(f.format);
    caps.rate = f.sample_rate;
    caps.channels = f.ch_layout.nb_channels;
    if (f.ch_layout.order == AV_CHANNEL_ORDER_UNSPEC) {
        AVChannelLayout guess{};
        av_channel_layout_default(&guess, caps.channels);
        caps.channel_mask = gst_channel_mask(guess);
        av_channel_layout_uninit(&guess);
    } else {
        caps.channel_mask = gst_channel_mask(f.ch_layout);
    }
    return caps;
}

bool same_caps(const RawAudioCaps& a, const RawAudioCaps& b) noexcept {
    return a.format == b.format && a.rate == b.rate && a.channels == b.channels && a.channel_mask == b.channel_mask;
}

std::size_t audio_payload_size(const AVFrame& f) noexcept {
    return static_cast<std::size_t>(f.nb_samples) * static_cast<std::size_t>(f.ch_layout.nb_channels) *
           static_cast<std::size_t>(av_get_bytes_per_sample(static_cast<AVSampleFormat>(f.format)));
}

void copy_audio(const AVFrame& f, std::span<std::byte> out) noexcept {
    const auto format = static_cast<AVSampleFormat>(f.format);
    if (!av_sample_fmt_is_planar(format)) {
        std::memcpy(out.data(), f.extended_data[0], audio_payload_size(f));
        return;
    }
    // extended_data: more than 8 channels do not fit data[].
    const std::size_t plane = static_cast<std::size_t>(f.nb_samples) *
                              static_cast<std::size_t>(av_get_bytes_per_sample(format));
    for (int c = 0; c < f.ch_layout.nb_channels; ++c) {
        std::memcpy(out.data() + plane * static_cast<std::size_t>(c), f.extended_data[c], plane);
    }
}

void copy_audio_range(const AVFrame& f, int first, int count, std::span<std::byte> out) noexcept {
    const auto format = static_cast<AVSampleFormat>(f.format);
    const auto bps = static_cast<std::size_t>(av_get_bytes_per_sample(format));
    const auto channels = static_cast<std::size_t>(f.ch_layout.nb_channels);
    const auto from = static_cast<std::size_t>(first);
    const auto n = static_cast<std::size_t>(count);
    if (!av_sample_fmt_is_planar(format)) {
        std::memcpy(out.data(), f.extended_data[0] + from * channels * bps, n * channels * bps);
        return;
    }
    for (std::size_t c = 0; c < channels; ++c) {
        std::memcpy(out.data() + n * bps * c, f.extended_data[c] + from * bps, n * bps);
    }
}

std::int64_t AudioTimestamps::pts_ns(const AVFrame& f, std::int64_t offset_ns, bool packet_break) {
    const AVRational grid{1, f.sample_rate};
    if (f.sample_rate != rate_) { // a new rate starts a new grid
        rate_ = f.sample_rate;
        last_ = AV_NOPTS_VALUE;
    }
    if (packet_break) last_ = AV_NOPTS_VALUE; // fftools: the packet's own timestamp, rounded
    std::int64_t samples = 0;
    if (f.pts != AV_NOPTS_VALUE) {
        samples = av_rescale_delta(time_base_, f.pts - start_pts_, grid, f.nb_samples, &last_, grid);
    } else if (last_ != AV_NOPTS_VALUE) {
        samples = last_;
        last_ += f.nb_samples;
    } else {
        last_ = f.nb_samples; // the first frame, without a timestamp: at 0
    }
    return av_rescale_q(samples, grid, kNanoseconds) + offset_ns;
}

std::int64_t AudioTimestamps::duration_ns(const AVFrame& f) noexcept {
    return f.sample_rate > 0 ? av_rescale_q(f.nb_samples, AVRational{1, f.sample_rate}, kNanoseconds) : kNoTime;
}

void AudioTimestamps::restart() noexcept { last_ = AV_NOPTS_VALUE; }

} // namespace rdmastream::cli
