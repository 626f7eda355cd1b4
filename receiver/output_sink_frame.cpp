// SPDX-License-Identifier: LGPL-2.1-or-later
// OutputSink's per-frame path. Per frame: no allocation and no copy for
// .y4m and for packed layouts; one row-by-row copy into a buffer sized once
// per format for padded layouts in raw muxers (counted); for encoders, the
// two small objects of av_buffer_create (counted as zero-copy) or, when the
// encoder holds too many slots, a copy into a frame of its own (counted).
#include "output_sink.hpp"
#include "rdmastream_cli/av_time.hpp"

#include "rdmastream_cli/av_error.hpp"
#include "rdmastream_cli/av_side_data.hpp"

#include "rdmastream/error.hpp"
#include "rdmastream/no_time.hpp"

extern "C" {
#include <libavutil/imgutils.h>
}

#include <fmt/format.h>

#include <cstring>

namespace rdmastream::cli {
bool OutputSink::consume(const ReceivedFrame& frame) {
    if (frame.header.flow != video_flow_) return write_audio(audio_[frame.header.flow], frame);
    switch (mode_) {
    case Mode::kWrappedFrame: return write_wrapped(frame);
    case Mode::kRawPacket: return write_raw(frame);
    case Mode::kEncode: return encode(frame);
    case Mode::kAudioOnly: break; // takes() gave it no pictures
    }
    return true;
}

// Timestamps in time_base_; a frame without one follows the previous frame.
void OutputSink::set_timestamps(const ReceivedFrame& frame, std::int64_t& pts, std::int64_t& duration) {
    pts = frame.header.pts == kNoTime ? next_pts_ : av_rescale_q(frame.header.pts, kNanoseconds, time_base_);
    duration = frame.header.duration == kNoTime || frame.header.duration <= 0
                   ? (caps_.framerate.num > 0 ? 1 : 0) // one tick of 1/fps
                   : av_rescale_q(frame.header.duration, kNanoseconds, time_base_);
    next_pts_ = pts + std::max<std::int64_t>(duration, 1);
}

void OutputSink::point_frame_at(const ReceivedFrame& frame, AVFrame* out) const {
    // The ring is read-only to us; FFmpeg's AVFrame has no const planes.
    auto* base = const_cast<std::uint8_t*>(reinterpret_cast<const std::uint8_t*>(frame.payload.data()));
    for (int i = 0; i < geometry_.plane_count; ++i) {
        const auto idx = static_cast<std::size_t>(i);
        out->data[idx] = base + layout_->layout.plane(static_cast<unsigned>(i)).offset;
        out->linesize[idx] = static_cast<int>(layout_->layout.plane(static_cast<unsigned>(i)).stride);
    }
    out->format = caps_.format;
    out->width = caps_.width;
    out->height = caps_.height;
    out->sample_aspect_ratio = caps_.pixel_aspect_ratio;
}

// Stamps packet_ (data and size already set) as one key frame of `stream`
// and writes it; the muxer is done with the data when this returns.
void OutputSink::write_packet(const AVStream* stream, AVRational time_base, std::int64_t pts, std::int64_t duration) {
    packet_->pts = packet_->dts = pts;
    packet_->duration = duration;
    packet_->flags = AV_PKT_FLAG_KEY;
    packet_->stream_index = stream->index;
    av_packet_rescale_ts(packet_.get(), time_base, stream->time_base);
    check_av(av_write_frame(out_.get(), packet_.get()), "av_write_frame", path_);
}

// .y4m: the packet carries an AVFrame (not refcounted) whose planes are the
// slot's; av_write_frame hands it straight to the muxer, which writes the
// rows out before returning.
bool OutputSink::write_wrapped(const ReceivedFrame& frame) {
    std::int64_t pts = 0, duration = 0;
    set_timestamps(frame, pts, duration);
    point_frame_at(frame, frame_.get());
    frame_->pts = pts;
    packet_->data = reinterpret_cast<std::uint8_t*>(frame_.get());
    packet_->size = static_cast<int>(sizeof(AVFrame));
    write_packet(stream_, time_base_, pts, duration);
    return true;
}

// Raw video in nut, mkv, avi...: the packet is the packed picture. A packet
// without a buffer reference is written synchronously by av_write_frame (a
// muxer that wanted to keep it would have to copy it), so the slot or
// packed_copy_ is free again when it returns.
bool OutputSink::write_raw(const ReceivedFrame& frame) {
    std::int64_t pts = 0, duration = 0;
    set_timestamps(frame, pts, duration);
    const auto* base = reinterpret_cast<const std::uint8_t*>(frame.payload.data());
    if (packed_) {
        packet_->data = const_cast<std::uint8_t*>(base + layout_->layout.plane(0).offset);
    } else {
        std::uint8_t* dst = packed_copy_.data();
        for (int i = 0; i < geometry_.plane_count; ++i) {
            const auto idx = static_cast<std::size_t>(i);
            const PlaneGeometry& g = geometry_.planes[idx];
            av_image_copy_plane(dst, static_cast<int>(g.row_bytes), base + layout_->layout.plane(static_cast<unsigned>(i)).offset,
                                static_cast<int>(layout_->layout.plane(static_cast<unsigned>(i)).stride), static_cast<int>(g.row_bytes), g.rows);
            dst += g.row_bytes * static_cast<std::size_t>(g.rows);
        }
        packet_->data = packed_copy_.data();
        ++frames_copied_[frame.header.flow];
    }
    packet_->size = static_cast<int>(geometry_.packed_size);
    write_packet(stream_, time_base_, pts, duration);
    return true;
}

void OutputSink::encoder_released(void* opaque, std::uint8_t*) {
    // Any thread (frame-threaded encoders free on their workers).
    const auto* t = static_cast<const Ticket*>(opaque);
    t->sink->encoder_holds_.fetch_sub(1, std::memory_order_relaxed);
    t->sink->released_.push(t->slot);
}

// An encoder may keep the frame (lookahead, frame threads): it gets a
// reference to the slot, which comes back through encoder_released. Should
// it already hold all slots but one, it gets a copy: the sender needs a
// free slot for the frame the encoder is waiting for.
bool OutputSink::encode(const ReceivedFrame& frame) {
    std::int64_t pts = 0, duration = 0;
    set_timestamps(frame, pts, duration);
    const bool copy = encoder_holds_.load(std::memory_order_relaxed) + 1 >= released_.slots();
    if (!copy) {
        point_frame_at(frame, frame_.get());
        auto* base = const_cast<std::uint8_t*>(reinterpret_cast<const std::uint8_t*>(frame.payload.data()));
        frame_->buf[0] = av_buffer_create(base, frame.payload.size(), &OutputSink::encoder_released,
                                          &tickets_[frame.slot], AV_BUFFER_FLAG_READONLY);
        if (frame_->buf[0] == nullptr) throw std::bad_alloc();
        encoder_holds_.fetch_add(1, std::memory_order_relaxed);
    } else {
        const auto* base = reinterpret_cast<const std::uint8_t*>(frame.payload.data());
        const std::uint8_t* src[4] = {};
        int src_stride[4] = {};
        for (int i = 0; i < geometry_.plane_count; ++i) {
            const auto idx = static_cast<std::size_t>(i);
            src[idx] = base + layout_->layout.plane(static_cast<unsigned>(i)).offset;
            src_stride[idx] = static_cast<int>(layout_->layout.plane(static_cast<unsigned>(i)).stride);
        }
        frame_->format = caps_.format;
        frame_->width = caps_.width;
        frame_->height = caps_.height;
        check_av(av_frame_get_buffer(frame_.get(), 0), "av_frame_get_buffer", path_);
        av_image_copy(frame_->data, frame_->linesize, src, src_stride,
                      caps_.format, caps_.width, caps_.height);
        frame_->sample_aspect_ratio = caps_.pixel_aspect_ratio;
        ++frames_copied_[frame.header.flow];
    }
    frame_->pts = pts;
    frame_->pkt_duration = duration;
    // Captions, timecode, HDR metadata: side data again, for an encoder that
    // writes them (libx264, libx265: captions as A53 SEI).
    AvSideData::attach(frame.side_data, frame_.get());
    const int rc = avcodec_send_frame(enc_.get(), frame_.get());
    av_frame_unref(frame_.get()); // our reference; the encoder has its own if it kept the frame
    check_av(rc, "avcodec_send_frame", fmt::format("-o {} (frame {})", path_, frame.header.sequence));
    write_encoded_packets();
    return copy; // zero-copy: the slot comes back through encoder_released
}

void OutputSink::write_encoded_packets() {
    for (;;) {
        const int rc = avcodec_receive_packet(enc_.get(), packet_.get());
        if (rc == AVERROR(EAGAIN) || rc == AVERROR_EOF) return;
        check_av(rc, "avcodec_receive_packet", path_);
        packet_->stream_index = stream_->index;
        av_packet_rescale_ts(packet_.get(), enc_->time_base, stream_->time_base);
        // Takes the packet's reference (and blanks packet_ for reuse).
        check_av(av_interleaved_write_frame(out_.get(), packet_.get()), "av_interleaved_write_frame", path_);
    }
}

} // namespace rdmastream::cli
