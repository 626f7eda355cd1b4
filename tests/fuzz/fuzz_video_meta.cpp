// SPDX-License-Identifier: LGPL-2.1-or-later
// The caps -> layout -> GstVideoMeta path of rdmasrc (and rdmarecv --gst):
// a stream format off the wire read and checked by gstslots' FrameLayout
// (as adopt_format and read_stream_layout do), a frame payload of any size
// checked against it (check_frame), set_video_meta, and then what any
// downstream element does: map the frame by its meta and read every plane
// (gst_video_frame_copy). The payload is an allocation of exactly its size,
// so a layout that sends a reader past it is an ASan report; so is a plane
// FrameLayout measures past its own min_payload or the max_frame_size.
//
// Input: 4 bytes (little endian): bits 0..30 the payload size (taken modulo
// kMaxPayload + 1), bit 31 the buffer is a recycled shell that still
// carries an older frame's meta; then a kFormat payload (decode_stream_format).
#include "fuzz_gst.hpp"
#include "fuzz_input.hpp"

#include "wire/wire.hpp"
#include "rdmastream_gst/frame_layout.hpp"
#include "rdmastream_gst/video_meta.hpp"

#include <gst/video/video.h>

#include <optional>

namespace wire = rdmastream::wire;
using rdmastream::fuzz::accepted;

namespace {

// Bounds of this harness, not of the protocol: pictures and payloads up to
// 8 MiB keep one run within milliseconds and the fuzzer's memory small.
constexpr std::size_t kMaxPayload = 8u << 20;

// A slot's frame: exactly `size` bytes of memory (one more if empty, for a
// valid pointer), the buffer's size `size`.
GstBuffer* frame_buffer(std::size_t size) {
    auto* block = static_cast<guint8*>(g_malloc(size == 0 ? 1 : size));
    return gst_buffer_new_wrapped_full(static_cast<GstMemoryFlags>(0), block, size, 0, size, block, g_free);
}

// Downstream: map the frame by its meta and read every plane into a frame
// of the caps' own layout.
void read_like_downstream(GstBuffer* buffer, const GstVideoInfo& info) {
    GstVideoFrame src;
    if (!gst_video_frame_map(&src, &info, buffer, GST_MAP_READ)) {
        return; // GStreamer refuses it (e.g. no meta and too small): nothing is read
    }
    GstBuffer* copy = gst_buffer_new_allocate(nullptr, GST_VIDEO_INFO_SIZE(&info), nullptr);
    GstVideoFrame dst;
    FUZZ_CHECK(gst_video_frame_map(&dst, &info, copy, GST_MAP_WRITE));
    gst_video_frame_copy(&dst, &src);
    gst_video_frame_unmap(&dst);
    gst_video_frame_unmap(&src);
    gst_buffer_unref(copy);
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    rdmastream::fuzz::init_gstreamer();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    rdmastream::fuzz::Input in(data, size);
    const auto word = in.take<std::uint32_t>();
    const std::size_t payload = (word & 0x7fffffffu) % (kMaxPayload + 1);
    const bool recycled = (word >> 31) != 0;
    const auto format = accepted([&] { return wire::decode_stream_format(in.rest()); });
    if (!format) {
        return 0;
    }
    if (!rdmastream::fuzz::balanced(format->caps)) {
        return -1; // GStreamer leaks on these (fuzz_gst.hpp)
    }
    const auto layout = accepted([&] { return rdmastream::gst::FrameLayout::check(*format, "the fuzzer"); });
    if (!layout) {
        return 0;
    }
    if (layout->raw_video() && GST_VIDEO_INFO_SIZE(&layout->info()) > kMaxPayload) {
        return 0; // beyond this harness's bound
    }
    FUZZ_CHECK(layout->min_payload() <= format->max_frame_size);
    for (unsigned p = 0; p < layout->plane_count(); ++p) FUZZ_CHECK(layout->plane(p).end <= layout->min_payload());
    if (!accepted([&] {
            layout->check_frame(0, payload);
            return true;
        })) {
        FUZZ_CHECK(payload < layout->min_payload());
        return 0; // refused by name: nothing downstream sees it
    }
    rdmastream::fuzz::CriticalsAreFindings criticals; // the caps parsed: every call below is ours
    GstBuffer* buffer = frame_buffer(payload);
    if (recycled) { // an older frame's meta, as a SlotBuffers shell keeps it
        gst_buffer_add_video_meta(buffer, GST_VIDEO_FRAME_FLAG_NONE, GST_VIDEO_FORMAT_GRAY8, 1, 1);
    }
    rdmastream::gst::set_video_meta(buffer, *layout);
    if (layout->raw_video()) {
        read_like_downstream(buffer, layout->info());
    }
    gst_buffer_unref(buffer);
    return 0;
}
