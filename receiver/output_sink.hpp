// SPDX-License-Identifier: LGPL-2.1-or-later
// -o FILE [--codec NAME]: frames into any file FFmpeg can mux, the muxer
// chosen by the file name. Three ways in, picked once per stream:
//  - wrapped_avframe (.y4m): the muxer reads the planes through an AVFrame
//    whose data pointers are the slot's planes: no copy at all;
//  - rawvideo (.nut, .mkv, .avi, ...): the packet is the packed picture;
//    the slot itself when the sender's layout is already packed, else one
//    counted copy that drops the row padding;
//  - an encoder (--codec libx264, ffv1, mjpeg, ...): the encoder gets an
//    AVFrame over the slot (av_buffer_create); the slot's credit returns
//    when the encoder lets go of the frame, on whichever thread. An encoder
//    that would hold all but one slot gets a copy instead (counted), so the
//    sender always has a slot to write the next frame into.
// Timestamps are the sender's (nanoseconds, rescaled to the stream's time
// base), durations too; frames without a timestamp follow the previous one.
//
// Audio (output_sink_audio.cpp) is written as PCM of its own sample format
// (pcm_u8, pcm_s16le, pcm_s32le, pcm_f32le, pcm_f64le: lossless, so
// decoding the file gives the sender's decoded samples exactly), one
// packet per frame in time base 1/rate: interleaved audio straight from
// the slot, planar audio interleaved into a buffer sized once per format
// (one counted copy). .wav, .mkv, .nut, .mov take it.
#pragma once

#include "audio_convert.hpp"
#include "frame_sink.hpp"
#include "slot_release_queue.hpp"

#include "rdmastream_cli/ff_ptr.hpp"
#include "rdmastream_cli/plane_geometry.hpp"

#include <array>
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace rdmastream::cli {

class OutputSink final : public FrameSink {
public:
    // Opens `path` for writing now, so a bad name or folder fails before
    // any connection. `codec` empty: raw video if the muxer takes it.
    OutputSink(const std::string& path, const std::string& codec, SlotReleaseQueue& released);
    ~OutputSink() override;
    void start_format(const StreamLayout& stream) override;
    bool consume(const ReceivedFrame& frame) override;
    void finish() override;
    std::uint64_t copies() const noexcept override { return frames_copied_; }

private:
    enum class Mode { kWrappedFrame, kRawPacket, kEncode, kAudioPacket };
    // What the encoder's free callback needs: which slot, whose queue.
    struct Ticket {
        OutputSink* sink = nullptr;
        std::uint16_t slot = 0;
    };

    void open_stream(const RawVideoCaps& caps);
    // Audio (output_sink_audio.cpp).
    void start_audio(const StreamLayout& stream);
    bool write_audio(const ReceivedFrame& frame);
    void open_encoder(const RawVideoCaps& caps);
    // Per frame (output_sink_frame.cpp).
    void point_frame_at(const ReceivedFrame& frame, AVFrame* out) const;
    bool write_wrapped(const ReceivedFrame& frame);
    bool write_raw(const ReceivedFrame& frame);
    void write_packet(std::int64_t pts, std::int64_t duration); // stamps and writes packet_
    bool encode(const ReceivedFrame& frame);
    void write_encoded_packets();
    void set_timestamps(const ReceivedFrame& frame, std::int64_t& pts, std::int64_t& duration);
    static void encoder_released(void* opaque, std::uint8_t* data);

    std::string path_;
    SlotReleaseQueue& released_;
    OutputContextPtr out_;
    const AVCodec* encoder_ = nullptr; // kEncode only
    Mode mode_ = Mode::kRawPacket;
    CodecContextPtr enc_;
    AVStream* stream_ = nullptr; // owned by out_
    AVRational time_base_{1, 1000000};  // frames' pts/duration (encoder's and our own)
    bool header_written_ = false;

    RawVideoCaps caps_;                    // the file's picture (its first format's)
    const StreamLayout* layout_ = nullptr; // the current format's planes
    FrameGeometry geometry_;               // layout_->geometry
    bool packed_ = false;     // the sender's layout is exactly the rawvideo packet: no copy
    std::int64_t next_pts_ = 0;

    FramePtr frame_ = make_frame();   // reused: the AVFrame over the current slot
    PacketPtr packet_ = make_packet(); // reused: the packet handed to the muxer
    // The rawvideo packet when the layout has padding: geometry_.packed_size,
    // which the checked layout bounds (each plane within a max_frame_size
    // the receiver's --max-frame-bytes limits).
    std::vector<std::uint8_t> packed_copy_;
    std::vector<Ticket> tickets_;      // one per slot, for the encoder's free callback
    std::string codec_name_;           // --codec (video only)
    RawAudioCaps audio_caps_;          // the file's audio (its first format's)
    AudioConverter interleave_;        // planar audio -> the packed PCM the file holds
    std::atomic<std::uint32_t> encoder_holds_{0}; // slots the encoder still references
    std::uint64_t frames_copied_ = 0; // frames that needed a CPU copy (what copies() reports)
};

} // namespace rdmastream::cli
