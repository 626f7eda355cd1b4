// SPDX-License-Identifier: LGPL-2.1-or-later
// A video flow of rdmasend's stream: each decoded picture sent as one
// frame, in place when the decoder wrote it into registered memory, else
// copied or converted (--pix-fmt) into a registered chunk; its format
// announced before its first frame and on every change; its side data
// (captions, timecode, HDR metadata) with it.
#pragma once

#include "flow_frames.hpp"
#include "frame_payload.hpp"
#include "send_context.hpp"
#include "stream_decoder.hpp"

#include "rdmastream_cli/av_side_data.hpp"
#include "rdmastream_cli/ff_ptr.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace rdmastream::cli {

class DecoderPool;

struct VideoOptions {
    AVPixelFormat target = AV_PIX_FMT_NONE; // --pix-fmt; NONE: as decoded
    std::string pix_fmt;                    // its name, for messages
    bool force_copy = false;                // --no-zero-copy
};

class VideoFlow {
public:
    // `pool`: the decoder's registered buffers (null: every picture is copied).
    VideoFlow(SendContext& ctx, std::uint8_t flow, const StreamDecoder& stream, DecoderPool* pool,
              const VideoOptions& options);

    // Sends `picture` (its reference moves into the flow's table when it
    // goes in place); `sar` is its sample aspect ratio. NotTaken when the
    // sender did not take it. A live sender with no free slot for a picture
    // that needs writing drops it unwritten.
    void send(AVFrame* picture, FrameMeta meta, AVRational sar);
    // Announces the format `picture` goes in, unless it is the one in force:
    // before the first frame of any flow, so that a receiver knows the whole
    // programme at its first frame (Receiver::flows).
    void announce_for(const AVFrame& picture, AVRational sar);
    FlowFrames& frames() noexcept { return frames_; }
    // Before the sender goes: the conversions and chunks let go.
    void release() noexcept;

private:
    void size_frames();
    void set_path(const char* path) noexcept;
    bool needs_conversion(const AVFrame& picture) const noexcept;
    std::optional<Payload> payload_of_decoded(const AVFrame& picture);
    PayloadLayout written_layout_of(const AVFrame& picture) const;
    void announce_layout(const PayloadLayout& layout, AVRational sar);
    Payload write_picture(const AVFrame& picture, std::size_t entry, const PayloadLayout& layout);
    void announce(const PayloadLayout& layout, AVRational sar);

    SendContext& ctx_;
    std::uint8_t flow_;
    const StreamDecoder& stream_;
    DecoderPool* pool_;
    VideoOptions options_;
    FlowFrames frames_;
    SwsPtr sws_;
    AvSideData side_data_; // the current picture's, packed for the transport
    std::optional<PayloadLayout> announced_;
    unsigned format_id_ = 0;
};

} // namespace rdmastream::cli
