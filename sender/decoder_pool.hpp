// SPDX-License-Identifier: LGPL-2.1-or-later
// Decoding straight into registered memory: a get_buffer2 that hands the
// decoder chunks of a BufferArena, all planes of a picture in one chunk, so
// the decoded frame is the payload the NIC reads (Chromium's
// ffmpeg_video_decoder.cc does the same with its own pool).
//
// Honours what the decoder asks for: its dimension and stride alignment
// (avcodec_align_dimensions2, as avcodec_default_get_buffer2 does) plus the
// over-read padding, and the frame's own size (not the context's). When the
// arena is exhausted (the decoder and the ring hold every chunk) the frame
// comes from FFmpeg's default allocator instead and takes the copy path.
//
// Thread rule: get_buffer2 runs on the decoder's threads; locate() on the
// sending thread. Both take the same (uncontended) lock.
#pragma once

#include "buffer_arena.hpp"

extern "C" {
#include <libavcodec/avcodec.h>
}

#include <array>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

namespace rdmastream::cli {

class DecoderPool {
public:
    DecoderPool() = default;
    DecoderPool(const DecoderPool&) = delete;
    DecoderPool& operator=(const DecoderPool&) = delete;

    // Installs get_buffer2 on `ctx` (before avcodec_open2) if the decoder
    // can decode into caller memory (AV_CODEC_CAP_DR1). Returns whether it did.
    bool attach(AVCodecContext* ctx, const AVCodec* codec);
    // Where the chunks are registered, once connected (before the first
    // decode), and how many frames the sender may hold in flight at once.
    // Until then the decoder gets FFmpeg's own buffers.
    void bind(MemoryDomain domain, std::size_t held_downstream);

    // The registered chunk holding every plane of `f`, if the decoder wrote
    // it into one of ours, and the FrameMemory a send from it names (its
    // arena's: kept alive by the chunk's AVBuffer, which the frame holds).
    struct InPlace {
        std::span<const std::byte> chunk;
        const FrameMemory* memory = nullptr;
    };
    std::optional<InPlace> locate(const AVFrame& f);

    // An exception thrown inside get_buffer2 cannot cross FFmpeg's C frames:
    // it is kept and rethrown here, after the decode call failed.
    void rethrow_pending();

private:
    static int get_buffer2(AVCodecContext* ctx, AVFrame* frame, int flags);
    int fill(AVCodecContext* ctx, AVFrame* frame, int flags);
    void cut_arena(AVCodecContext* ctx, const AVFrame& frame); // for a new geometry

    std::optional<MemoryDomain> domain_; // from bind(): until then, FFmpeg's own buffers
    std::size_t held_ = 0;
    std::mutex mu_;
    AVPixelFormat format_ = AV_PIX_FMT_NONE;
    int width_ = 0, height_ = 0;
    std::array<int, 4> linesize_{};
    std::array<std::size_t, 4> offset_{};
    std::shared_ptr<BufferArena> arena_;
    std::vector<std::weak_ptr<BufferArena>> retired_; // frames of an older geometry may still be out
    std::exception_ptr error_;
};

} // namespace rdmastream::cli
