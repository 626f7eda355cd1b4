// SPDX-License-Identifier: LGPL-2.1-or-later
// A stream format as rdmarecv's outputs read it, worked out once per format
// before any of them sees a frame: GStreamer's checked layout (where the
// planes are, how many bytes a frame must have; gstslots' FrameLayout, the
// one rdmasrc uses too), FFmpeg's names for the caps GStreamer read
// (raw_video_caps), and the bytes each plane's visible rows span (what -o
// and --framemd5 read). FFmpeg's rows must lie within the layout's checked
// bytes, so a frame that passes check_frame (one comparison, in the
// receive loop) is safe for every output.
//
// Raw audio (audio/x-raw) has no planes in the format: its caps say the
// sample format, layout, rate and channels (raw_audio_caps), and a frame
// must hold a whole number of sample frames (one sample of every channel),
// at least one: then a planar frame's channels lie at size / channels
// apart, and every output reads exactly the payload.
#pragma once

#include "rdmastream_cli/audio_caps.hpp"
#include "rdmastream_cli/plane_geometry.hpp"
#include "rdmastream_cli/raw_caps.hpp"
#include "rdmastream_gst/frame_layout.hpp"

#include <string_view>

namespace rdmastream::cli {

struct StreamLayout {
    gst::FrameLayout layout; // the caps as GStreamer read them; for video, the planes (layout.plane(i))
    bool audio = false;      // raw audio: audio_caps, no planes; else raw video: caps, geometry
    RawVideoCaps caps;       // FFmpeg's pixel format, size, rate
    FrameGeometry geometry;  // visible bytes per plane, at layout's offsets and strides
    RawAudioCaps audio_caps; // FFmpeg's sample format, rate, channels; GStreamer's positions
    std::uint32_t sample_frame_bytes = 0; // audio: bytes of one sample of every channel

    // A frame of this format (frame `sequence` of the stream): throws
    // ProtocolError naming the sender, the frame, its size and the format
    // when its payload is too short for the planes (video), or not a
    // non-zero whole number of sample frames within the format's
    // max_frame_size (audio: the outputs size their buffers by it). A few
    // comparisons; the message is built only on refusal.
    void check_frame(std::uint64_t sequence, std::size_t payload_size) const {
        if (!audio) {
            layout.check_frame(sequence, payload_size);
        } else if (payload_size == 0 || payload_size % sample_frame_bytes != 0 ||
                   payload_size > layout.format().max_frame_size) {
            refuse_audio_frame(sequence, payload_size);
        }
    }
    // Audio: samples per channel in a checked frame of `payload_size` bytes.
    int samples(std::size_t payload_size) const noexcept {
        return static_cast<int>(payload_size / sample_frame_bytes);
    }

private:
    [[noreturn]] void refuse_audio_frame(std::uint64_t sequence, std::size_t payload_size) const;
};

// Throws ProtocolError (naming `sender`, the format and the numbers) for a
// format FrameLayout refuses, caps that are neither raw video FFmpeg can
// name (raw_video_caps) nor raw audio rdmarecv takes (raw_audio_caps),
// FFmpeg's planes not matching GStreamer's, or audio with planes.
StreamLayout read_stream_layout(const StreamFormat& format, std::string_view sender);

} // namespace rdmastream::cli
