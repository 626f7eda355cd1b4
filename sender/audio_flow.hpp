// SPDX-License-Identifier: LGPL-2.1-or-later
// An audio flow of rdmasend's stream: one decoded audio frame, one
// transport frame, its samples exactly as decoded (audio_frames.hpp),
// copied into a registered chunk (a few KiB a frame; decoders allocate
// audio by their own rules); its format announced before its first frame,
// when the caps change, and when a frame is larger than the format said.
#pragma once

#include "audio_frames.hpp"
#include "flow_frames.hpp"
#include "send_context.hpp"
#include "stream_decoder.hpp"

#include <cstdint>
#include <optional>

namespace rdmastream::cli {

class AudioFlow {
public:
    // `packet_ms` (--audio-packet-ms): each decoded frame goes as packets
    // of that many milliseconds (the last one of a frame may be shorter);
    // 0: a decoded frame is one transport frame.
    AudioFlow(SendContext& ctx, std::uint8_t flow, const StreamDecoder& stream, double packet_ms = 0);

    // Sends `frame`'s samples (NotTaken when the sender did not take
    // them). A live sender with no free slot drops the frame (or the
    // packet) uncopied; an empty frame is not sent (nothing to hear, and
    // receivers refuse it).
    void send(const AVFrame& frame, FrameMeta meta);
    // Announces the format `frame` goes in, unless the one in force takes
    // it (VideoFlow::announce_for).
    void announce_for(const AVFrame& frame);
    FlowFrames& frames() noexcept { return frames_; }
    void release() noexcept { frames_.release_arena(); }

private:
    void announce(const RawAudioCaps& caps, std::uint32_t max_frame_size);
    // Samples per packet at `rate` (--audio-packet-ms), 0 without; throws
    // UserError when the length is no whole number of samples.
    int packet_samples(int rate) const;
    // Samples [first, first + count) of `frame` as one transport frame.
    void send_samples(const AVFrame& frame, int first, int count, FrameMeta meta);

    SendContext& ctx_;
    std::uint8_t flow_;
    const StreamDecoder& stream_;
    FlowFrames frames_;
    std::optional<RawAudioCaps> announced_;
    std::uint32_t announced_max_ = 0;
    unsigned format_id_ = 0;
    double packet_ms_ = 0;
};

} // namespace rdmastream::cli
