// SPDX-License-Identifier: LGPL-2.1-or-later
// FrameLayout (gstslots): a stream format off the wire read once through
// GStreamer and checked against its max_frame_size, then each frame against
// it in one comparison; set_video_meta writes the checked layout. What it
// refuses, downstream would otherwise have read past the frame. The cases
// marked fuzz_video_meta were that fuzzer's findings (tests/fuzz/).
#include "rdmastream/error.hpp"
#include "wire/wire.hpp"
#include "rdmastream_gst/frame_layout.hpp"
#include "rdmastream_gst/video_meta.hpp"

#include <gst/video/video.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace wire = rdmastream::wire;
using rdmastream::ProtocolError;
using rdmastream::gst::FrameLayout;
using rdmastream::gst::set_video_meta;
using ::testing::HasSubstr;

namespace {

constexpr const char* kSender = "198.18.0.2:40000";

class Layout : public ::testing::Test {
protected:
    static void SetUpTestSuite() { gst_init(nullptr, nullptr); }
    void TearDown() override {
        if (buffer_ != nullptr) gst_buffer_unref(buffer_);
    }

    static GstVideoInfo info_of(const std::string& caps_text) {
        GstCaps* caps = gst_caps_from_string(caps_text.c_str());
        GstVideoInfo info;
        EXPECT_TRUE(caps != nullptr && gst_video_info_from_caps(&info, caps)) << caps_text;
        if (caps != nullptr) gst_caps_unref(caps);
        return info;
    }
    // The caps' own layout, as rdmasink announces a buffer without a meta.
    static wire::StreamFormat own_layout(const std::string& caps) {
        const GstVideoInfo info = info_of(caps);
        wire::StreamFormat f;
        f.id = 7;
        f.caps = caps;
        f.max_frame_size = static_cast<std::uint32_t>(GST_VIDEO_INFO_SIZE(&info));
        f.plane_count = static_cast<std::uint8_t>(GST_VIDEO_INFO_N_PLANES(&info));
        for (std::size_t i = 0; i < f.plane_count; ++i) {
            f.planes[i] = {static_cast<std::uint32_t>(GST_VIDEO_INFO_PLANE_OFFSET(&info, i)),
                           static_cast<std::uint32_t>(GST_VIDEO_INFO_PLANE_STRIDE(&info, i))};
        }
        return f;
    }
    // The ProtocolError FrameLayout::check throws, or "" when it accepts.
    static std::string refusal(const wire::StreamFormat& f) {
        try {
            FrameLayout::check(f, kSender);
            return "";
        } catch (const ProtocolError& e) {
            return e.what();
        }
    }
    GstBuffer* frame(std::size_t size) {
        buffer_ = gst_buffer_new_allocate(nullptr, size, nullptr);
        return buffer_;
    }

    GstBuffer* buffer_ = nullptr;
};

TEST_F(Layout, ReadsALayoutThatFits) {
    const wire::StreamFormat f = own_layout("video/x-raw,format=I420,width=320,height=240");
    const FrameLayout l = FrameLayout::check(f, kSender);
    EXPECT_TRUE(l.raw_video());
    EXPECT_EQ(l.plane_count(), 3u);
    EXPECT_EQ(l.min_payload(), 320u * 240 * 3 / 2);
    EXPECT_EQ(l.plane(1).offset, f.planes[1].offset);
    EXPECT_EQ(l.plane(1).rows, 120u);
    EXPECT_EQ(l.plane(1).row_bytes, 160u);
    set_video_meta(frame(l.min_payload()), l);
    const GstVideoMeta* meta = gst_buffer_get_video_meta(buffer_);
    ASSERT_NE(meta, nullptr);
    EXPECT_EQ(meta->n_planes, 3u);
    EXPECT_EQ(meta->offset[2], f.planes[2].offset);
    EXPECT_EQ(meta->stride[1], static_cast<gint>(f.planes[1].stride));
}

// Issue 11's hostile layout: GRAY8 4096x4096 in 4096-byte frames with a
// plane stride of 0x7fffffff made rdmasrc ! videoconvert die of SIGSEGV.
// Refused when the format arrives, naming the sender and the numbers.
TEST_F(Layout, RefusesTheHostileLayoutOfIssue11) {
    wire::StreamFormat f;
    f.id = 1;
    f.caps = "video/x-raw,format=GRAY8,width=4096,height=4096,framerate=30/1";
    f.max_frame_size = 4096;
    f.plane_count = 1;
    f.planes[0] = {0, 0x7fffffff};
    const std::string why = refusal(f);
    EXPECT_THAT(why, HasSubstr("stream format 1 from the sender at 198.18.0.2:40000"));
    EXPECT_THAT(why, HasSubstr("plane 0 (offset 0, stride 2147483647, 4096 rows of 4096 bytes) reaches byte "
                               "8793945538561, past the format's 4096-byte max_frame_size"));
    f.planes[0].stride = 4096; // a sane stride, but still 16 MiB of picture in 4 KiB frames
    EXPECT_THAT(refusal(f), HasSubstr("reaches byte 16777216, past the format's 4096-byte max_frame_size"));
}

// rdmasend's payload ends with the last row's pixels, not its stride's padding.
TEST_F(Layout, AcceptsAPayloadEndingWithTheLastVisibleRow) {
    wire::StreamFormat f = own_layout("video/x-raw,format=NV12,width=322,height=242");
    f.planes[0] = {0, 384};
    f.planes[1] = {384 * 242, 384};
    const std::uint32_t end = 384 * 242 + 384 * 120 + 322; // 121 chroma rows of 322 bytes
    f.max_frame_size = end;
    const FrameLayout l = FrameLayout::check(f, kSender);
    EXPECT_EQ(l.min_payload(), end);
    EXPECT_NO_THROW(l.check_frame(0, end));
}

// A frame shorter than its format needs is refused by name: the sender,
// the frame, both sizes.
TEST_F(Layout, RefusesAFrameShorterThanItsFormat) {
    const FrameLayout l = FrameLayout::check(own_layout("video/x-raw,format=GRAY8,width=64,height=64"), kSender);
    EXPECT_NO_THROW(l.check_frame(4, 4096));
    try {
        l.check_frame(5, 100);
        FAIL() << "accepted";
    } catch (const ProtocolError& e) {
        EXPECT_THAT(std::string(e.what()), HasSubstr("frame 5 from the sender at 198.18.0.2:40000 has 100 payload "
                                                     "bytes, but its stream format 7"));
        EXPECT_THAT(std::string(e.what()), HasSubstr("needs 4096"));
    }
}

// fuzz_video_meta: v210 64x25 announced with stride 256 and a 4096-byte
// frame; downstream read 25 rows of 256 bytes (heap-buffer-overflow in
// gst_video_frame_copy_plane).
TEST_F(Layout, RefusesPlanesReachingPastTheFrame) {
    wire::StreamFormat f;
    f.id = 1;
    f.caps = "video/x-raw,format=v210,width=64,height=25";
    f.max_frame_size = 4096;
    f.plane_count = 1;
    f.planes[0] = {0, 256};
    EXPECT_THAT(refusal(f), HasSubstr("past the format's 4096-byte max_frame_size"));
    wire::StreamFormat i420 = own_layout("video/x-raw,format=I420,width=320,height=240");
    i420.max_frame_size -= 1;
    EXPECT_THAT(refusal(i420), HasSubstr("plane 2"));
}

// Without the sender's planes the frame is in the caps' own layout, which
// must fit too (downstream maps it by the caps alone).
TEST_F(Layout, ChecksTheCapsOwnLayoutWhenTheSenderGivesNone) {
    wire::StreamFormat f;
    f.id = 2;
    f.caps = "video/x-raw,format=RGBA,width=64,height=64";
    f.max_frame_size = 64 * 64 * 4;
    const FrameLayout l = FrameLayout::check(f, kSender);
    EXPECT_FALSE(l.sender_layout());
    EXPECT_EQ(l.min_payload(), 64u * 64 * 4);
    set_video_meta(frame(l.min_payload()), l);
    EXPECT_EQ(gst_buffer_get_video_meta(buffer_), nullptr);
    f.max_frame_size -= 1;
    EXPECT_THAT(refusal(f), HasSubstr("past the format's 16383-byte max_frame_size"));
}

// GStreamer maps no frame whose meta has fewer planes than its format
// (a g_return_val_if_fail in gst_video_frame_map).
TEST_F(Layout, RefusesFewerPlanesThanTheCapsFormat) {
    wire::StreamFormat f = own_layout("video/x-raw,format=I420,width=64,height=64");
    f.plane_count = 1;
    EXPECT_THAT(refusal(f), HasSubstr("describes 1 planes, its caps' format I420 has 3"));
}

// A stride of 2^31 or more is negative as a gint: rows read backwards.
TEST_F(Layout, RefusesStridesGStreamerCannotHold) {
    wire::StreamFormat f = own_layout("video/x-raw,format=GRAY8,width=16,height=1");
    f.planes[0].stride = 0x80000000u;
    EXPECT_THAT(refusal(f), HasSubstr("more than GStreamer takes"));
}

TEST_F(Layout, RefusesAStrideShorterThanARow) {
    wire::StreamFormat f = own_layout("video/x-raw,format=RGBA,width=16,height=4");
    f.planes[0].stride = 63; // a row is 64 bytes
    EXPECT_THAT(refusal(f), HasSubstr("stride 63 for rows of 64 bytes"));
}

// A tiled plane is read tile by tile as its stride's tile counts say.
TEST_F(Layout, RefusesATiledLayoutOtherThanTheCapsOwn) {
    wire::StreamFormat f = own_layout("video/x-raw,format=NV12_4L4,width=64,height=64");
    EXPECT_EQ(refusal(f), "");
    f.planes[0].stride = GST_VIDEO_TILE_MAKE_STRIDE(64, 64);
    EXPECT_THAT(refusal(f), HasSubstr("tiled plane 0"));
}

// Caps GStreamer cannot read, or that are not one fixed format.
TEST_F(Layout, RefusesCapsGStreamerCannotRead) {
    wire::StreamFormat f;
    f.id = 3;
    f.max_frame_size = 4096;
    f.caps = "video/x-raw,format={I420,NV12},width=64,height=64";
    EXPECT_THAT(refusal(f), HasSubstr("cannot read its caps"));
    f.caps = "video/x-raw,format=NOPE,width=64,height=64";
    EXPECT_THAT(refusal(f), HasSubstr("cannot read \"video/x-raw,format=NOPE"));
}

// Opaque caps: no planes, any size.
TEST_F(Layout, TakesOpaqueCapsAsBytes) {
    wire::StreamFormat f;
    f.id = 4;
    f.max_frame_size = 4096;
    f.caps = "video/x-h264,stream-format=byte-stream,alignment=au";
    const FrameLayout l = FrameLayout::check(f, kSender);
    EXPECT_FALSE(l.raw_video());
    EXPECT_EQ(l.min_payload(), 0u);
    EXPECT_NO_THROW(l.check_frame(0, 0));
}

// A recycled shell's meta is rewritten in place, and removed for a format
// in the caps' own layout.
TEST_F(Layout, RewritesARecycledMeta) {
    wire::StreamFormat f = own_layout("video/x-raw,format=GRAY8,width=32,height=8");
    set_video_meta(frame(7 * 36 + 32), FrameLayout::check(f, kSender));
    const GstVideoMeta* meta = gst_buffer_get_video_meta(buffer_);
    ASSERT_NE(meta, nullptr);
    f.planes[0].stride = 36;
    f.max_frame_size = 7 * 36 + 32;
    set_video_meta(buffer_, FrameLayout::check(f, kSender));
    EXPECT_EQ(gst_buffer_get_video_meta(buffer_), meta);
    EXPECT_EQ(meta->stride[0], 36);
    f.plane_count = 0;
    set_video_meta(buffer_, FrameLayout::check(f, kSender));
    EXPECT_EQ(gst_buffer_get_video_meta(buffer_), nullptr);
}

} // namespace
