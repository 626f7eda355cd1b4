// set_video_meta (gstslots) with layouts off the wire: the GstVideoMeta it
// writes is what downstream reads a frame by, so a layout that reaches past
// the frame, lacks planes or has an unusable stride is refused.
// Each refusal case was a fuzz_video_meta finding (tests/fuzz/).
#include "rdmastream/error.hpp"
#include "rdmastream/wire.hpp"
#include "rdmastream_gst/video_meta.hpp"

#include <gst/video/video.h>

#include <gtest/gtest.h>

#include <string>

namespace wire = rdmastream::wire;
using rdmastream::ProtocolError;
using rdmastream::gst::set_video_meta;

namespace {

class VideoMeta : public ::testing::Test {
protected:
    static void SetUpTestSuite() { gst_init(nullptr, nullptr); }
    void TearDown() override {
        if (buffer_ != nullptr) gst_buffer_unref(buffer_);
    }

    // Fixed raw video caps, as rdmasrc reads them.
    static GstVideoInfo info_of(const std::string& caps_text) {
        GstCaps* caps = gst_caps_from_string(caps_text.c_str());
        GstVideoInfo info;
        EXPECT_TRUE(caps != nullptr && gst_video_info_from_caps(&info, caps)) << caps_text;
        if (caps != nullptr) gst_caps_unref(caps);
        return info;
    }
    // The caps' own layout, as rdmasink announces a buffer without a meta.
    static wire::StreamFormat own_layout(const GstVideoInfo& info) {
        wire::StreamFormat f;
        f.id = 7;
        f.max_frame_size = static_cast<std::uint32_t>(GST_VIDEO_INFO_SIZE(&info));
        f.plane_count = static_cast<std::uint8_t>(GST_VIDEO_INFO_N_PLANES(&info));
        for (std::size_t i = 0; i < f.plane_count; ++i) {
            f.planes[i] = {static_cast<std::uint32_t>(GST_VIDEO_INFO_PLANE_OFFSET(&info, i)),
                           static_cast<std::uint32_t>(GST_VIDEO_INFO_PLANE_STRIDE(&info, i))};
        }
        return f;
    }
    // A frame's buffer of `size` payload bytes.
    GstBuffer* frame(std::size_t size) {
        buffer_ = gst_buffer_new_allocate(nullptr, size, nullptr);
        return buffer_;
    }

    GstBuffer* buffer_ = nullptr;
};

TEST_F(VideoMeta, DescribesALayoutThatFits) {
    const GstVideoInfo info = info_of("video/x-raw,format=I420,width=320,height=240");
    const wire::StreamFormat f = own_layout(info);
    set_video_meta(frame(GST_VIDEO_INFO_SIZE(&info)), &info, f);
    const GstVideoMeta* meta = gst_buffer_get_video_meta(buffer_);
    ASSERT_NE(meta, nullptr);
    EXPECT_EQ(meta->n_planes, 3u);
    EXPECT_EQ(meta->offset[2], f.planes[2].offset);
    EXPECT_EQ(meta->stride[1], static_cast<gint>(f.planes[1].stride));
}

// rdmasend's payload ends with the last row's pixels, not its stride's padding.
TEST_F(VideoMeta, AcceptsAPayloadEndingWithTheLastVisibleRow) {
    const GstVideoInfo info = info_of("video/x-raw,format=NV12,width=322,height=242");
    wire::StreamFormat f = own_layout(info);
    f.planes[0] = {0, 384};
    f.planes[1] = {384 * 242, 384};
    const std::size_t end = 384 * 242 + 384 * 120 + 322; // 121 chroma rows of 322 bytes
    set_video_meta(frame(end), &info, f);
    EXPECT_NE(gst_buffer_get_video_meta(buffer_), nullptr);
}

// fuzz_video_meta: v210 64x25 announced with stride 256 and a 4096-byte
// frame; downstream read 25 rows of 256 bytes (heap-buffer-overflow in
// gst_video_frame_copy_plane).
TEST_F(VideoMeta, RefusesPlanesReachingPastTheFrame) {
    const GstVideoInfo info = info_of("video/x-raw,format=v210,width=64,height=25");
    wire::StreamFormat f;
    f.id = 1;
    f.max_frame_size = 4096;
    f.plane_count = 1;
    f.planes[0] = {0, 256};
    EXPECT_THROW(set_video_meta(frame(4096), &info, f), ProtocolError);
    EXPECT_EQ(gst_buffer_get_video_meta(buffer_), nullptr);

    const GstVideoInfo i420 = info_of("video/x-raw,format=I420,width=320,height=240");
    EXPECT_THROW(set_video_meta(frame(GST_VIDEO_INFO_SIZE(&i420) - 1), &i420, own_layout(i420)), ProtocolError);
}

// GStreamer maps no frame whose meta has fewer planes than its format
// (a g_return_val_if_fail in gst_video_frame_map).
TEST_F(VideoMeta, RefusesFewerPlanesThanTheCapsFormat) {
    const GstVideoInfo info = info_of("video/x-raw,format=I420,width=64,height=64");
    wire::StreamFormat f = own_layout(info);
    f.plane_count = 1;
    EXPECT_THROW(set_video_meta(frame(GST_VIDEO_INFO_SIZE(&info)), &info, f), ProtocolError);
}

// A stride of 2^31 or more is negative as a gint: rows read backwards.
TEST_F(VideoMeta, RefusesStridesGStreamerCannotHold) {
    const GstVideoInfo info = info_of("video/x-raw,format=GRAY8,width=16,height=1");
    wire::StreamFormat f = own_layout(info);
    f.planes[0].stride = 0x80000000u;
    EXPECT_THROW(set_video_meta(frame(64), &info, f), ProtocolError);
}

TEST_F(VideoMeta, RefusesAStrideShorterThanARow) {
    const GstVideoInfo info = info_of("video/x-raw,format=RGBA,width=16,height=4");
    wire::StreamFormat f = own_layout(info);
    f.planes[0].stride = 63; // a row is 64 bytes
    EXPECT_THROW(set_video_meta(frame(GST_VIDEO_INFO_SIZE(&info)), &info, f), ProtocolError);
}

// A tiled plane is read tile by tile as its stride's tile counts say.
TEST_F(VideoMeta, RefusesATiledLayoutOtherThanTheCapsOwn) {
    const GstVideoInfo info = info_of("video/x-raw,format=NV12_4L4,width=64,height=64");
    wire::StreamFormat f = own_layout(info);
    set_video_meta(frame(GST_VIDEO_INFO_SIZE(&info)), &info, f);
    f.planes[0].stride = GST_VIDEO_TILE_MAKE_STRIDE(64, 64);
    EXPECT_THROW(set_video_meta(buffer_, &info, f), ProtocolError);
}

// A recycled shell's meta is rewritten in place, and left alone on refusal.
TEST_F(VideoMeta, RewritesARecycledMetaAndKeepsItOnRefusal) {
    const GstVideoInfo info = info_of("video/x-raw,format=GRAY8,width=32,height=8");
    wire::StreamFormat f = own_layout(info);
    set_video_meta(frame(GST_VIDEO_INFO_SIZE(&info)), &info, f);
    const GstVideoMeta* meta = gst_buffer_get_video_meta(buffer_);
    f.planes[0].stride = 40;
    EXPECT_THROW(set_video_meta(buffer_, &info, f), ProtocolError); // 7 * 40 + 32 > 256
    EXPECT_EQ(gst_buffer_get_video_meta(buffer_), meta);
    EXPECT_EQ(meta->stride[0], 32);
    f.planes[0].stride = 32;
    f.planes[0].offset = 0;
    set_video_meta(buffer_, &info, f);
    EXPECT_EQ(gst_buffer_get_video_meta(buffer_), meta);
}

} // namespace
