// SPDX-License-Identifier: LGPL-2.1-or-later
// Side data in GStreamer's terms (gstslots/side_data_*, rdmasink_sidedata),
// natively: the 12M word's bits as docs/protocol.md
// gives them, the HDR bytes, what rdmasink gathers from a buffer and its
// caps, and what rdmasrc attaches. rdma.gst_side_data carries them over RDMA.
#include "rdmastream_gst/side_data_bytes.hpp"
#include "rdmasink_sidedata.hpp"
#include "rdmastream_gst/side_data_metas.hpp"

#include "gst_test_env.hpp"

#include <gst/video/video.h>
#include <gtest/gtest.h>

#include <vector>

using namespace rdmastream;
using namespace rdmastream::gst;

namespace {

GST_DEBUG_CATEGORY_STATIC(side_data_test_debug);

class SideDataTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        init_gstreamer_for_tests();
        GST_DEBUG_CATEGORY_INIT(side_data_test_debug, "side-data-test", 0, "side data tests");
    }
    void SetUp() override { element_ = GST_ELEMENT(gst_object_ref_sink(gst_element_factory_make("fakesink", nullptr))); }
    void TearDown() override { gst_object_unref(element_); }
    GstElement* element_ = nullptr;
};

std::vector<std::byte> bytes(std::initializer_list<unsigned> v) {
    std::vector<std::byte> out;
    for (unsigned b : v) out.push_back(static_cast<std::byte>(b));
    return out;
}

GstVideoMasteringDisplayInfo bt2020_display() {
    GstVideoMasteringDisplayInfo m;
    gst_video_mastering_display_info_init(&m);
    m.display_primaries[0] = {35400, 14600}; // red
    m.display_primaries[1] = {8500, 39850};  // green
    m.display_primaries[2] = {6550, 2300};   // blue
    m.white_point = {15635, 16450};
    m.max_display_mastering_luminance = 10000000; // 1000 cd/m²
    m.min_display_mastering_luminance = 50;
    return m;
}

const SideData* entry(std::span<const SideData> side, SideDataKind kind) {
    for (const SideData& e : side) {
        if (e.kind == kind) return &e;
    }
    return nullptr;
}

} // namespace

TEST_F(SideDataTest, TimecodeWordHasProtocolBits) {
    // 12:34:56:23: BCD digits in bits 0-5, 8-14, 16-22, 24-29; bit 30 drop frame.
    EXPECT_EQ(pack_timecode({12, 34, 56, 23, false}, 30, 1), 0x23563412u);
    EXPECT_EQ(pack_timecode({1, 2, 3, 4, true}, 30000, 1001), 0x44030201u);
    EXPECT_EQ(pack_timecode({23, 59, 59, 24, false}, 25, 1), 0x24595923u);
    EXPECT_FALSE(pack_timecode({24, 0, 0, 0, false}, 25, 1));
    EXPECT_FALSE(pack_timecode({0, 60, 0, 0, false}, 25, 1));
}

TEST_F(SideDataTest, TimecodeRoundTrips) {
    for (const auto& [fps_n, fps_d, frames] : {std::tuple{25u, 1u, 24u}, {30u, 1u, 29u}, {30000u, 1001u, 29u},
                                                {50u, 1u, 49u}, {60u, 1u, 59u}, {60000u, 1001u, 59u}, {24u, 1u, 0u}}) {
        const Timecode tc{10, 20, 30, frames, fps_d == 1001};
        const auto word = pack_timecode(tc, fps_n, fps_d);
        ASSERT_TRUE(word) << fps_n << "/" << fps_d;
        const auto back = unpack_timecode(*word, fps_n, fps_d);
        ASSERT_TRUE(back) << fps_n << "/" << fps_d;
        EXPECT_EQ(back->hours, 10u);
        EXPECT_EQ(back->minutes, 20u);
        EXPECT_EQ(back->seconds, 30u);
        EXPECT_EQ(back->frames, frames) << fps_n << "/" << fps_d;
        EXPECT_EQ(back->drop_frame, fps_d == 1001);
    }
}

// Above 30 fps FFmpeg's av_timecode_get_smpte counts frame pairs and marks
// the second of a pair with bit 7 (50 fps) or bit 23 (others).
TEST_F(SideDataTest, FramePairsAbove30Fps) {
    EXPECT_EQ(pack_timecode({0, 0, 0, 49, false}, 50, 1), 0x24000000u | (1u << 7));
    EXPECT_EQ(pack_timecode({0, 0, 0, 59, false}, 60, 1), 0x29000000u | (1u << 23));
    EXPECT_EQ(pack_timecode({0, 0, 0, 58, false}, 60, 1), 0x29000000u);
}

TEST_F(SideDataTest, UnpackRefusesDigitsOutOfRange) {
    EXPECT_FALSE(unpack_timecode(0x00000024, 25, 1));  // hour 24
    EXPECT_FALSE(unpack_timecode(0x0000000a, 25, 1));  // hour units not BCD
    EXPECT_FALSE(unpack_timecode(0x00006000, 25, 1));  // minute 60
    EXPECT_FALSE(unpack_timecode(0x00600000, 25, 1));  // second 60
    EXPECT_FALSE(unpack_timecode(0x25000000, 25, 1));  // frame 25 at 25 fps
    EXPECT_FALSE(unpack_timecode(0x30000000, 30000, 1001)); // frame 30 at 29.97
    EXPECT_FALSE(unpack_timecode(0x01000000, 0, 1));   // no framerate: frames mean nothing
    EXPECT_TRUE(unpack_timecode(0x29000000, 30000, 1001));
}

// Field and binary group flags (bits 7, 15, 23, 31) do not change a timecode at 30 fps and below.
TEST_F(SideDataTest, UnpackIgnoresFlagBits) {
    const auto tc = unpack_timecode(0x04030201u | 1u << 7 | 1u << 15 | 1u << 23 | 1u << 31, 30, 1);
    ASSERT_TRUE(tc);
    EXPECT_EQ(tc->hours, 1u);
    EXPECT_EQ(tc->minutes, 2u);
    EXPECT_EQ(tc->seconds, 3u);
    EXPECT_EQ(tc->frames, 4u);
    EXPECT_FALSE(tc->drop_frame);
}

TEST_F(SideDataTest, MasteringDisplayBytes) {
    const MasteringBytes b = encode_mastering(bt2020_display());
    // Red x = 35400 = 0x8a48 first, little-endian; min luminance 50 last.
    EXPECT_EQ(b[0], std::byte{0x48});
    EXPECT_EQ(b[1], std::byte{0x8a});
    EXPECT_EQ(b[12], std::byte{15635 & 0xff}); // white point x after the three primaries
    EXPECT_EQ(b[16], std::byte{0x80});         // 10000000 = 0x00989680
    EXPECT_EQ(b[19], std::byte{0x00});
    EXPECT_EQ(b[20], std::byte{50});
    const GstVideoMasteringDisplayInfo back = decode_mastering(b);
    const GstVideoMasteringDisplayInfo want = bt2020_display();
    EXPECT_TRUE(gst_video_mastering_display_info_is_equal(&back, &want));
}

TEST_F(SideDataTest, ContentLightBytes) {
    GstVideoContentLightLevel l;
    gst_video_content_light_level_init(&l);
    l.max_content_light_level = 1000;
    l.max_frame_average_light_level = 400;
    const ContentLightBytes b = encode_content_light(l);
    EXPECT_EQ(std::vector(b.begin(), b.end()), bytes({0xe8, 0x03, 0x90, 0x01}));
    const GstVideoContentLightLevel back = decode_content_light(b);
    EXPECT_TRUE(gst_video_content_light_level_is_equal(&back, &l));
}

TEST_F(SideDataTest, SinkGathersMetasAndCapsFields) {
    GstCaps* caps = gst_caps_from_string("video/x-raw,format=I420,width=64,height=48,framerate=30/1");
    GstVideoMasteringDisplayInfo m = bt2020_display();
    gst_video_mastering_display_info_add_to_caps(&m, caps);
    GstVideoContentLightLevel l{1000, 400, {}};
    gst_video_content_light_level_add_to_caps(&l, caps);
    SinkSideData sink(GST_OBJECT(element_), side_data_test_debug);
    sink.set_caps(caps);
    gst_caps_unref(caps);

    GstBuffer* buf = gst_buffer_new();
    const guint8 cc[] = {0xfc, 0x94, 0x2c, 0xfd, 0x80, 0x80};
    gst_buffer_add_video_caption_meta(buf, GST_VIDEO_CAPTION_TYPE_CEA608_RAW, cc, 2); // not carried
    gst_buffer_add_video_caption_meta(buf, GST_VIDEO_CAPTION_TYPE_CEA708_RAW, cc, sizeof cc);
    gst_buffer_add_video_time_code_meta_full(buf, 30, 1, nullptr, GST_VIDEO_TIME_CODE_FLAGS_NONE, 1, 2, 3, 4, 0);
    const auto side = sink.gather(buf, kDefaultSideDataBytes);
    ASSERT_EQ(side.size(), 4u);
    const SideData* c = entry(side, SideDataKind::kCaptions);
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(std::vector(c->bytes.begin(), c->bytes.end()), bytes({0xfc, 0x94, 0x2c, 0xfd, 0x80, 0x80}));
    const SideData* t = entry(side, SideDataKind::kTimecode);
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(std::vector(t->bytes.begin(), t->bytes.end()), bytes({0x01, 0x02, 0x03, 0x04}));
    ASSERT_NE(entry(side, SideDataKind::kMasteringDisplay), nullptr);
    ASSERT_NE(entry(side, SideDataKind::kContentLight), nullptr);

    // Too little room: the captions stay behind, the rest goes.
    EXPECT_EQ(sink.gather(buf, 4 + 24 + 4 + 4 + 4 + 4).size(), 3u);
    gst_buffer_unref(buf);

    // A buffer with nothing, caps with nothing: no entries.
    GstCaps* plain = gst_caps_from_string("video/x-raw,format=I420,width=64,height=48,framerate=30/1");
    sink.set_caps(plain);
    gst_caps_unref(plain);
    GstBuffer* bare = gst_buffer_new();
    EXPECT_TRUE(sink.gather(bare, kDefaultSideDataBytes).empty());
    gst_buffer_unref(bare);
}

TEST_F(SideDataTest, SinkLeavesOutCaptionsThatAreNotTriplets) {
    SinkSideData sink(GST_OBJECT(element_), side_data_test_debug);
    GstBuffer* buf = gst_buffer_new();
    const guint8 cc[] = {0xfc, 0x94, 0x2c, 0xfd};
    gst_buffer_add_video_caption_meta(buf, GST_VIDEO_CAPTION_TYPE_CEA708_RAW, cc, sizeof cc);
    EXPECT_TRUE(sink.gather(buf, kDefaultSideDataBytes).empty());
    gst_buffer_unref(buf);
}

TEST_F(SideDataTest, SrcAttachesMetas) {
    SrcSideData src(element_, side_data_test_debug);
    GstCaps* base = gst_caps_from_string("video/x-raw,format=I420,width=64,height=48,framerate=30000/1001");
    const auto cc = bytes({0xfc, 0x94, 0x2c});
    const auto tc = bytes({0x01, 0x02, 0x03, 0x44}); // 01:02:03;04, drop frame
    const std::vector<SideData> side{{SideDataKind::kCaptions, cc}, {SideDataKind::kTimecode, tc}};
    GstCaps* caps = src.caps_for(base, side);
    EXPECT_TRUE(gst_caps_is_equal(caps, base)); // no HDR: the sender's caps as they are
    EXPECT_FALSE(src.hdr_changed(side));
    GstBuffer* buf = gst_buffer_new();
    src.attach(buf, side);
    const GstVideoCaptionMeta* c = gst_buffer_get_video_caption_meta(buf);
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c->caption_type, GST_VIDEO_CAPTION_TYPE_CEA708_RAW);
    ASSERT_EQ(c->size, 3u);
    EXPECT_EQ(c->data[1], 0x94);
    const GstVideoTimeCodeMeta* t = gst_buffer_get_video_time_code_meta(buf);
    ASSERT_NE(t, nullptr);
    gchar* text = gst_video_time_code_to_string(&t->tc);
    EXPECT_STREQ(text, "01:02:03;04");
    g_free(text);
    EXPECT_EQ(t->tc.config.fps_n, 30000u);
    gst_buffer_unref(buf);
    gst_caps_unref(caps);
    gst_caps_unref(base);
}

TEST_F(SideDataTest, SrcLeavesOutTimecodesOutOfRange) {
    SrcSideData src(element_, side_data_test_debug);
    GstCaps* base = gst_caps_from_string("video/x-raw,format=I420,width=64,height=48,framerate=25/1");
    gst_caps_unref(src.caps_for(base, {}));
    for (const auto& word : {bytes({0x24, 0, 0, 0}), bytes({0, 0, 0, 0x25}), bytes({0, 0, 0, 0x41})}) {
        // hour 24; frame 25 at 25 fps; drop frame at 25 fps (GStreamer refuses it)
        const std::vector<SideData> side{{SideDataKind::kTimecode, word}};
        GstBuffer* buf = gst_buffer_new();
        src.attach(buf, side);
        EXPECT_EQ(gst_buffer_get_video_time_code_meta(buf), nullptr);
        gst_buffer_unref(buf);
    }
    gst_caps_unref(base);
}

TEST_F(SideDataTest, SrcPutsHdrIntoCaps) {
    SrcSideData src(element_, side_data_test_debug);
    GstCaps* base = gst_caps_from_string("video/x-raw,format=I420,width=64,height=48,framerate=30/1");
    const MasteringBytes m = encode_mastering(bt2020_display());
    const auto l = bytes({0xe8, 0x03, 0x90, 0x01});
    const std::vector<SideData> side{{SideDataKind::kMasteringDisplay, m}, {SideDataKind::kContentLight, l}};
    GstCaps* plain = src.caps_for(base, {});
    EXPECT_TRUE(src.hdr_changed(side));
    GstCaps* caps = src.caps_for(base, side);
    EXPECT_FALSE(src.hdr_changed(side));
    GstVideoMasteringDisplayInfo got;
    ASSERT_TRUE(gst_video_mastering_display_info_from_caps(&got, caps));
    const GstVideoMasteringDisplayInfo want = bt2020_display();
    EXPECT_TRUE(gst_video_mastering_display_info_is_equal(&got, &want));
    GstVideoContentLightLevel level;
    ASSERT_TRUE(gst_video_content_light_level_from_caps(&level, caps));
    EXPECT_EQ(level.max_content_light_level, 1000);
    EXPECT_EQ(level.max_frame_average_light_level, 400);
    EXPECT_TRUE(src.hdr_changed({})); // a frame without them: the caps lose them
    gst_caps_unref(caps);
    gst_caps_unref(plain);
    gst_caps_unref(base);
}
