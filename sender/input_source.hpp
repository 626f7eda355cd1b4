// SPDX-License-Identifier: LGPL-2.1-or-later
// The input: whatever FFmpeg opens (file, URL, or "lavfi:GRAPH"), one video
// or audio stream of it (stream_choice.hpp), decoded. Other streams are
// discarded at the demuxer.
//
// The decode loop is FFmpeg's doc/examples/demux_decode.c: EAGAIN and EOF
// are normal, the decoder is drained with a NULL packet at the end.
#pragma once

#include "rdmastream_cli/ff_ptr.hpp"

#include <cstdint>
#include <string>

namespace rdmastream::cli {

class DecoderPool;

struct InputOptions {
    std::string url;
    int stream = -1; // index among the video streams; -1: FFmpeg's best
    std::string map; // --map: an FFmpeg stream specifier ("0:a:0"); empty: `stream` picks
    int threads = 0; // decoder threads; 0: FFmpeg decides
};

class InputSource {
public:
    // Opens and probes; throws UserError for an unreadable input, no stream
    // to send (stream_choice.hpp) or no decoder. `pool` (may be null) gets the decoder before
    // it opens, to hand it registered buffers.
    InputSource(const InputOptions& opts, DecoderPool* pool);

    // The next decoded frame into `out` (unreffed first); false at the end
    // of the input. A corrupt packet is skipped with a warning unless the
    // decoder gives up entirely.
    bool next(AVFrame* out);
    // Back to the start (--loop); the decoder is flushed.
    void rewind();

    AVRational time_base() const noexcept { return stream_->time_base; }
    bool audio() const noexcept { return stream_->codecpar->codec_type == AVMEDIA_TYPE_AUDIO; }
    // Audio: the decoder's rate and samples per frame (0: they vary).
    int sample_rate() const noexcept { return dec_->sample_rate; }
    int frame_size() const noexcept { return dec_->frame_size; }
    AVRational frame_rate() const noexcept { return frame_rate_; }
    AVRational sample_aspect_ratio(const AVFrame& f) const noexcept;
    // Start of the file in the stream's time base (timestamps are sent from 0, as ffmpeg does).
    std::int64_t start_pts() const noexcept { return start_pts_; }
    // 0..1 of the input for a frame at `pts`; < 0 when the input has no duration.
    double progress(std::int64_t pts) const noexcept;
    bool zero_copy_capable() const noexcept { return attached_; }
    const std::string& describe() const noexcept { return description_; }
    std::uint64_t corrupt_packets() const noexcept { return corrupt_packets_; }
    // Whether the packet last given to the decoder started more than its
    // duration after the previous one (fftools' test, decode_audio), for
    // AudioTimestamps: an audio decoder's frame comes from that packet.
    bool packet_break() const noexcept { return packet_break_; }

private:
    bool feed(); // sends one packet (or the drain) to the decoder; false when drained already

    std::string url_;
    InputContextPtr fmt_;
    AVStream* stream_ = nullptr;
    CodecContextPtr dec_;
    PacketPtr pkt_;
    DecoderPool* pool_;
    AVRational frame_rate_{0, 1};
    std::int64_t start_pts_ = 0;
    bool attached_ = false;
    bool draining_ = false;
    std::int64_t prev_packet_pts_ = AV_NOPTS_VALUE;
    bool packet_break_ = false;
    std::uint64_t corrupt_packets_ = 0;
    std::string description_;
};

} // namespace rdmastream::cli
