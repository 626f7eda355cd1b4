// SPDX-License-Identifier: LGPL-2.1-or-later
// The pure half of the plugin: caps to the wire and back.
#include "rdmacaps.hpp"

#include "wire/wire.hpp"
#include "rdmastream/error.hpp"

#include "gst_test_env.hpp"

#include <gtest/gtest.h>

using namespace rdmastream;
using namespace rdmastream::gst;

namespace {

GstVideoInfo info_of(const char* caps_text) {
    GstCaps* caps = gst_caps_from_string(caps_text);
    GstVideoInfo info;
    EXPECT_TRUE(gst_video_info_from_caps(&info, caps)) << caps_text;
    gst_caps_unref(caps);
    return info;
}

class CapsTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() { init_gstreamer_for_tests(); }
};

} // namespace

TEST_F(CapsTest, I420PlanesFollowTheDefaultLayout) {
    const PlaneSet p = planes_of(info_of("video/x-raw,format=I420,width=320,height=240"));
    ASSERT_EQ(p.count, 3);
    EXPECT_EQ(p.planes[0].offset, 0u);
    EXPECT_EQ(p.planes[0].stride, 320u);
    EXPECT_EQ(p.planes[1].offset, 320u * 240);
    EXPECT_EQ(p.planes[1].stride, 160u);
    EXPECT_EQ(p.planes[2].offset, 320u * 240 + 160 * 120);
}

TEST_F(CapsTest, Nv12AndPackedFormats) {
    EXPECT_EQ(planes_of(info_of("video/x-raw,format=NV12,width=64,height=48")).count, 2);
    const PlaneSet rgba = planes_of(info_of("video/x-raw,format=RGBA,width=64,height=48"));
    ASSERT_EQ(rgba.count, 1);
    EXPECT_EQ(rgba.planes[0].stride, 256u);
    // v210: 48 pixels in 128 bytes, rows padded to that.
    const PlaneSet v210 = planes_of(info_of("video/x-raw,format=v210,width=64,height=48"));
    ASSERT_EQ(v210.count, 1);
    EXPECT_EQ(v210.planes[0].stride, 256u);
}

TEST_F(CapsTest, VideoMetaLayoutWins) {
    GstBuffer* buf = gst_buffer_new_allocate(nullptr, 4096 * 3, nullptr);
    gsize offset[4] = {0, 4096, 8192, 0};
    gint stride[4] = {128, 64, 64, 0};
    GstVideoMeta* meta =
        gst_buffer_add_video_meta_full(buf, GST_VIDEO_FRAME_FLAG_NONE, GST_VIDEO_FORMAT_I420, 64, 32, 3, offset, stride);
    const PlaneSet p = planes_of(*meta);
    ASSERT_EQ(p.count, 3);
    EXPECT_EQ(p.planes[1].offset, 4096u);
    EXPECT_EQ(p.planes[0].stride, 128u);
    EXPECT_FALSE(p == planes_of(info_of("video/x-raw,format=I420,width=64,height=32")));
    gst_buffer_unref(buf);
}

TEST_F(CapsTest, StreamFormatCarriesTheCapsString) {
    const wire::StreamFormat f = stream_format("image/jpeg,width=320,height=240", PlaneSet{}, 65536, 7);
    EXPECT_EQ(f.id, 7);
    EXPECT_EQ(f.plane_count, 0);
    EXPECT_EQ(f.max_frame_size, 65536u);
    EXPECT_EQ(f.caps, "image/jpeg,width=320,height=240");
    EXPECT_THROW(stream_format(std::string(wire::kMaxCapsLength + 1, 'x'), PlaneSet{}, 1, 1), UserError);
}

TEST_F(CapsTest, OpaqueBudgetIsAPowerOfTwo) {
    EXPECT_EQ(opaque_frame_budget(100), 65536u);
    EXPECT_EQ(opaque_frame_budget(65537), 131072u);
    EXPECT_EQ(opaque_frame_budget(1u << 20), 1u << 20);
}
