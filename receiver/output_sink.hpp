// SPDX-License-Identifier: LGPL-2.1-or-later
// -o FILE [--codec NAME]: a programme into any file FFmpeg can mux, the
// muxer chosen by the file name: its first video flow and every audio flow
// the file type holds, one stream each, the header written once every flow
// of the programme has its format. Three ways in for the pictures, picked
// once:
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
// Audio (output_sink_audio.cpp), one stream per audio flow, is written as
// PCM of its own sample format
// (pcm_u8, pcm_s16le, pcm_s32le, pcm_f32le, pcm_f64le: lossless, so
// decoding the file gives the sender's decoded samples exactly), one
// packet per frame in time base 1/rate: interleaved audio straight from
// the slot, planar audio interleaved into a buffer sized once per format
// (one counted copy). .wav, .mkv, .nut, .mov take it; a file type that
// holds no audio (.y4m) takes the pictures alone.
//
// Packets are written as they come (av_write_frame: the muxer is done with
// the slot when it returns), in the order the sender sent them: its decode
// order, which a demuxer interleaved already.
#pragma once

#include "audio_convert.hpp"
#include "frame_sink.hpp"
#include "slot_release_queue.hpp"

#include "rdmastream_cli/ff_ptr.hpp"
#include "rdmastream_cli/plane_geometry.hpp"

#include "rdmastream/format.hpp"

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
    void start_programme(std::uint16_t flows) override { programme_ = flows; }
    bool takes(const StreamLayout& stream) override;
    void start_format(const StreamLayout& stream) override;
    void programme_ready() override;
    bool consume(const ReceivedFrame& frame) override;
    void finish() override;
    std::uint64_t copies(std::uint8_t flow) const noexcept override { return frames_copied_[flow]; }

private:
    // How the pictures go in; kAudioOnly: the file type holds no video.
    enum class Mode { kWrappedFrame, kRawPacket, kEncode, kAudioOnly };
    // What the encoder's free callback needs: which slot, whose queue.
    struct Ticket {
        OutputSink* sink = nullptr;
        std::uint16_t slot = 0;
    };

    // An audio flow's stream in the file (output_sink_audio.cpp).
    struct AudioStream {
        AVStream* stream = nullptr;           // owned by out_; null: not in the file (yet)
        const StreamLayout* layout = nullptr; // the current format's
        RawAudioCaps caps;                    // the file's samples (the flow's first format's)
        AVRational time_base{1, 48000};       // 1/rate
        AudioConverter interleave;            // planar audio -> the packed PCM the file holds
        std::int64_t next_pts = 0;
    };

    void start_video(const StreamLayout& stream);
    void open_stream(const RawVideoCaps& caps);
    std::string describe_streams() const;
    // Audio (output_sink_audio.cpp).
    bool holds_audio(const RawAudioCaps& caps) const;
    void start_audio(AudioStream& a, const StreamLayout& stream);
    bool write_audio(AudioStream& a, const ReceivedFrame& frame);
    void open_encoder(const RawVideoCaps& caps);
    // Per frame (output_sink_frame.cpp).
    void point_frame_at(const ReceivedFrame& frame, AVFrame* out) const;
    bool write_wrapped(const ReceivedFrame& frame);
    bool write_raw(const ReceivedFrame& frame);
    // Stamps packet_ (data and size set) for `stream` and writes it.
    void write_packet(const AVStream* stream, AVRational time_base, std::int64_t pts, std::int64_t duration);
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
    std::uint16_t programme_ = 0; // the flows announced before the first frame (a bit each)
    int video_flow_ = -1;         // the flow whose pictures the file holds; -1: none
    AVStream* stream_ = nullptr; // the pictures' stream, owned by out_
    AVRational time_base_{1, 1000000};  // pictures' pts/duration (encoder's and our own)
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
    std::array<AudioStream, kMaxFlows> audio_; // by flow
    std::atomic<std::uint32_t> encoder_holds_{0}; // slots the encoder still references
    std::array<std::uint64_t, kMaxFlows> frames_copied_{}; // per flow, frames that needed a CPU copy (copies())
};

} // namespace rdmastream::cli
