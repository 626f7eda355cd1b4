// SPDX-License-Identifier: LGPL-2.1-or-later
// A stream format off the wire, read once and checked once: the one answer
// to "where are this format's planes, and how many bytes must a frame have"
// that rdmasrc and every rdmarecv output (--gst, -o, --framemd5) use.
//
// The caps are read by GStreamer (gst_caps_from_string, and GstVideoInfo for
// video/x-raw), so what is checked is exactly what downstream elements will
// read the frame by. For raw video, every plane the caps' format has must
// lie, at the sender's offset and stride, within the format's
// max_frame_size, with strides GStreamer can hold; all arithmetic is 64-bit
// on 32-bit fields, so nothing overflows. The bytes a frame must carry are
// then one number, and each frame costs one comparison (check_frame): no
// allocation, no copy, no syscall per frame.
#pragma once

#include "rdmastream/format.hpp"

#include <gst/gst.h>
#include <gst/video/video.h>

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace rdmastream::gst {

// One plane as readers touch it: `rows` rows of `row_bytes` bytes, `stride`
// apart, from `offset`; `end` = offset + stride * (rows - 1) + row_bytes,
// the first byte past what a reader reads.
struct PlaneExtent {
    std::uint32_t offset = 0;
    std::uint32_t stride = 0;
    std::uint64_t rows = 0;
    std::uint64_t row_bytes = 0;
    std::uint64_t end = 0;
};

class FrameLayout {
public:
    // Reads and checks `format`, announced by `sender` (its address, for
    // messages). Throws ProtocolError, naming the sender, the format and the
    // numbers, for caps GStreamer cannot read or that are not fixed, raw
    // video with fewer planes than its format has, a stride shorter than a
    // row or longer than GStreamer takes, a tiled plane not in the caps' own
    // tiling, or a plane that reaches past max_frame_size.
    static FrameLayout check(const StreamFormat& format, std::string_view sender);

    // The sender's caps, as GStreamer read them (owned by the layout).
    GstCaps* caps() const noexcept { return caps_.get(); }
    // video/x-raw that GstVideoInfo reads; otherwise the frames are opaque
    // bytes and have no planes.
    bool raw_video() const noexcept { return raw_video_; }
    const GstVideoInfo& info() const noexcept { return info_; }
    // Planes of the caps' format (0 when opaque), where they lie in the
    // payload: the sender's offsets and strides, or, when the sender
    // announced none, the caps' own layout.
    unsigned plane_count() const noexcept { return plane_count_; }
    const PlaneExtent& plane(unsigned i) const noexcept { return planes_[i]; }
    // Whether the sender gave its own plane layout (then frames carry a
    // GstVideoMeta; otherwise they are in the caps' own layout).
    bool sender_layout() const noexcept { return sender_layout_; }
    // The payload bytes a frame must have: the furthest plane end. Never more
    // than the format's max_frame_size.
    std::uint64_t min_payload() const noexcept { return min_payload_; }
    const StreamFormat& format() const noexcept { return format_; }
    const std::string& sender() const noexcept { return sender_; }

    // A frame of this format: throws ProtocolError naming the sender, the
    // frame and both sizes when its payload is shorter than min_payload().
    // One comparison; the message is built only on refusal.
    void check_frame(std::uint64_t sequence, std::size_t payload_size) const {
        if (payload_size < min_payload_) refuse_frame(sequence, payload_size);
    }

private:
    struct CapsUnref {
        void operator()(GstCaps* c) const noexcept { gst_caps_unref(c); }
    };
    FrameLayout() = default;
    [[noreturn]] void refuse_frame(std::uint64_t sequence, std::size_t payload_size) const;

    std::unique_ptr<GstCaps, CapsUnref> caps_;
    bool raw_video_ = false;
    GstVideoInfo info_{};
    unsigned plane_count_ = 0;
    std::array<PlaneExtent, GST_VIDEO_MAX_PLANES> planes_{};
    bool sender_layout_ = false;
    std::uint64_t min_payload_ = 0;
    StreamFormat format_;
    std::string sender_;
};

} // namespace rdmastream::gst
