// SPDX-License-Identifier: LGPL-2.1-or-later
// The input: whatever FFmpeg opens (file, URL, or "lavfi:GRAPH"), the
// streams of it rdmasend sends (stream_choice.hpp), each decoded by its
// own StreamDecoder. One demuxer feeds them all, in the file's order; the
// other streams are discarded at the demuxer.
#pragma once

#include "stream_choice.hpp"
#include "stream_decoder.hpp"

#include "rdmastream_cli/ff_ptr.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace rdmastream::cli {

class DecoderPool;

struct InputOptions {
    std::string url;
    StreamChoice choice;
    int threads = 0; // decoder threads; 0: FFmpeg decides
};

class InputSource {
public:
    // Opens and probes; throws UserError for an unreadable input, no stream
    // to send (stream_choice.hpp) or no decoder. `pool` (may be null) gets
    // the first video stream's decoder before it opens, to hand it
    // registered buffers; other streams' frames are copied.
    InputSource(const InputOptions& opts, DecoderPool* pool);

    // The next decoded frame of any chosen stream into `out` (unreffed
    // first), and which one (its index in streams(): its flow); nullopt at
    // the end of the input. A corrupt packet is skipped with a warning
    // unless the decoder gives up entirely.
    std::optional<std::size_t> next(AVFrame* out);
    // Back to the start (--loop); the decoders are flushed.
    void rewind();

    std::size_t count() const noexcept { return decoders_.size(); }
    const StreamDecoder& stream(std::size_t i) const noexcept { return *decoders_[i]; }
    AVRational sample_aspect_ratio(std::size_t i, const AVFrame& f) const noexcept;
    // Start of the file in stream `i`'s time base (every stream's
    // timestamps are sent from this one instant, as ffmpeg shifts them).
    std::int64_t start_pts(std::size_t i) const noexcept;
    // 0..1 of the input for a frame of stream `i` at `pts`; < 0 when the
    // input has no duration.
    double progress(std::size_t i, std::int64_t pts) const noexcept;
    std::uint64_t corrupt_packets() const noexcept;

private:
    bool feed(); // one packet (or the drain) to its decoder; false once every decoder is drained

    std::string url_;
    InputContextPtr fmt_;
    PacketPtr pkt_;
    std::vector<std::unique_ptr<StreamDecoder>> decoders_;
    std::vector<int> flow_of_stream_; // the input's stream index -> its flow, -1: discarded
    std::size_t current_ = 0; // the decoder fed last: its frames come out first
    bool draining_ = false;
};

} // namespace rdmastream::cli
