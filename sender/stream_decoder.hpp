// SPDX-License-Identifier: LGPL-2.1-or-later
// One chosen stream of the input and its decoder: what InputSource feeds
// the stream's packets to and takes its frames from. The decode calls are
// FFmpeg's doc/examples/demux_decode.c: EAGAIN and EOF are normal, the
// decoder is drained with a NULL packet at the end.
#pragma once

#include "rdmastream_cli/ff_ptr.hpp"

#include <cstdint>
#include <string>

namespace rdmastream::cli {

class DecoderPool;

class StreamDecoder {
public:
    // Opens `stream`'s decoder; `pool` (may be null; video only) gets it
    // before it opens, to hand it registered buffers. Throws UserError for
    // no decoder, naming `url` and a transcode that would do.
    StreamDecoder(AVFormatContext* input, AVStream* stream, int threads, DecoderPool* pool, const std::string& url);

    // One packet of this stream in; false for a corrupt one (skipped, as
    // ffmpeg does, with a warning). `packet_break` is computed from it.
    bool send(const AVPacket& packet);
    // The end of the input: the decoder gives what it holds, then EOF.
    void drain();
    // 0: a frame in `out`; AVERROR(EAGAIN): it wants a packet; AVERROR_EOF:
    // drained. A picture lost to corrupt data is counted and skipped.
    int receive(AVFrame* out);
    // Back to the start (--loop).
    void flush();

    AVStream* stream() const noexcept { return stream_; }
    AVRational time_base() const noexcept { return stream_->time_base; }
    bool audio() const noexcept { return audio_; }
    // Audio: the decoder's rate and samples per frame (0: they vary).
    int sample_rate() const noexcept { return dec_->sample_rate; }
    int frame_size() const noexcept { return dec_->frame_size; }
    AVRational frame_rate() const noexcept { return frame_rate_; }
    bool zero_copy_capable() const noexcept { return attached_; }
    const std::string& describe() const noexcept { return description_; }
    std::uint64_t corrupt() const noexcept { return corrupt_; }
    // Whether the packet last given to the decoder started more than its
    // duration after the previous one (fftools' test, decode_audio), for
    // AudioTimestamps: an audio decoder's frame comes from that packet.
    bool packet_break() const noexcept { return packet_break_; }

private:
    AVStream* stream_;
    std::string url_;
    CodecContextPtr dec_;
    DecoderPool* pool_;
    bool audio_;
    bool attached_ = false;
    AVRational frame_rate_{0, 1};
    std::int64_t prev_packet_pts_ = AV_NOPTS_VALUE;
    bool packet_break_ = false;
    std::uint64_t corrupt_ = 0;
    std::string description_;
};

} // namespace rdmastream::cli
