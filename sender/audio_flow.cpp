// SPDX-License-Identifier: LGPL-2.1-or-later
#include "audio_flow.hpp"

#include "rdmastream_cli/raw_caps.hpp"

#include "rdmastream/error.hpp"

#include <fmt/format.h>

extern "C" {
#include <libavutil/mathematics.h>
}

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace rdmastream::cli {

AudioFlow::AudioFlow(SendContext& ctx, std::uint8_t flow, const StreamDecoder& stream, double packet_ms)
    : ctx_(ctx), flow_(flow), stream_(stream), frames_(ctx.tx, flow, ctx.fanout), packet_ms_(packet_ms) {
    ctx_.counters.flows[flow_].kind = "audio";
    if (flow_ == 0) frames_.size_to_depth(); // flow 0's slots come with the connection
}

void AudioFlow::announce(const RawAudioCaps& caps, std::uint32_t max_frame_size) {
    StreamFormat f;
    f.id = static_cast<std::uint16_t>(format_id_ % 0xffff + 1);
    ++format_id_;
    f.flow = flow_;
    f.max_frame_size = max_frame_size;
    f.plane_count = 0; // planar audio: the caps' layout says where each channel is
    f.caps = to_caps_string(caps);
    ctx_.tx.set_format(f, ctx_.idle);
    announced_ = caps;
    announced_max_ = max_frame_size;
    if (format_id_ > 1) ++ctx_.counters.format_changes;
    std::fprintf(stderr, "rdmasend: flow %u format %u: %s, frames of up to %u bytes\n", flow_, f.id, f.caps.c_str(),
                 f.max_frame_size);
    if (!frames_.sized()) frames_.size_to_depth();
}

int AudioFlow::packet_samples(int rate) const {
    if (packet_ms_ <= 0) return 0;
    const double exact = rate * packet_ms_ / 1000;
    const auto samples = static_cast<int>(std::llround(exact));
    if (samples < 1 || std::abs(exact - samples) > 1e-6) {
        throw UserError(fmt::format("--audio-packet-ms {}: at {} Hz that is {} samples, not a whole number: pick a "
                                    "length that is (at 48 kHz: 1, 0.125, 4 ...; at 44.1 kHz: 10, 20 ...)",
                                    packet_ms_, rate, exact));
    }
    return samples;
}

void AudioFlow::announce_for(const AVFrame& frame) {
    const RawAudioCaps caps = audio_caps_of(frame);
    const int packet = packet_samples(frame.sample_rate);
    const std::size_t sfb = static_cast<std::size_t>(sample_frame_bytes(caps));
    const std::size_t size = packet > 0 ? static_cast<std::size_t>(std::min(frame.nb_samples, packet)) * sfb
                                        : audio_payload_size(frame);
    if (size == 0) return; // nothing to hear: says nothing of the format
    if (!announced_ || !same_caps(*announced_, caps) || size > announced_max_) {
        const int per_frame = packet > 0 ? packet : std::max(stream_.frame_size(), 0);
        const std::size_t usual = static_cast<std::size_t>(per_frame) * sfb;
        announce(caps, static_cast<std::uint32_t>(std::max(size, usual)));
    }
}

// As for copied pictures, the live policy decides first. A format's bound
// is at least the decoder's frame size, so frames that vary below it
// (Opus, Vorbis) announce once.
void AudioFlow::send(const AVFrame& frame, FrameMeta meta) {
    const int packet = packet_samples(frame.sample_rate);
    if (packet == 0 || frame.nb_samples <= packet) {
        send_samples(frame, 0, frame.nb_samples, meta);
        return;
    }
    // Packets on the frame's sample grid: packet k starts at sample
    // position S + k * packet, S the frame's (its pts rounded to 1/rate).
    const std::int64_t start = av_rescale(meta.pts, frame.sample_rate, 1'000'000'000);
    for (int first = 0; first < frame.nb_samples; first += packet) {
        const int count = std::min(packet, frame.nb_samples - first);
        meta.pts = av_rescale(start + first, 1'000'000'000, frame.sample_rate);
        meta.duration = av_rescale(count, 1'000'000'000, frame.sample_rate);
        send_samples(frame, first, count, meta);
    }
}

void AudioFlow::send_samples(const AVFrame& frame, int first, int count, FrameMeta meta) {
    ++ctx_.counters.flows[flow_].frames;
    if (frames_.sized() && !ctx_.tx.takes_frame_now(flow_)) {
        ctx_.tx.skip_frame(flow_);
        return;
    }
    const std::size_t size = audio_payload_size(frame) / static_cast<std::size_t>(std::max(frame.nb_samples, 1)) *
                             static_cast<std::size_t>(count);
    if (size == 0) return; // a decoder's empty frame
    announce_for(frame);
    const std::size_t entry = frames_.take_entry(ctx_.idle);
    const auto chunk = frames_.written_chunk(entry, size, ctx_.idle);
    if (count == frame.nb_samples) {
        copy_audio(frame, chunk);
    } else {
        copy_audio_range(frame, first, count, chunk);
    }
    ++ctx_.counters.copied;
    ++ctx_.counters.flows[flow_].copied;
    if (flow_ == 0) { // the stream's path is its first flow's (a programme's: its video's)
        ctx_.counters.path = "decoder -> one copy into a registered buffer (audio: a few KiB a frame)";
    }
    meta.flow = flow_;
    ctx_.tell_clock(meta.pts);
    frames_.send(entry, frames_.written_memory(), chunk.first(size), meta, ctx_.idle);
}

} // namespace rdmastream::cli
