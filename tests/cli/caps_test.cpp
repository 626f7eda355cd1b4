// SPDX-License-Identifier: LGPL-2.1-or-later
// The shared CLI code that needs no RDMA: caps both ways (rdmasend writes
// them, rdmarecv reads them with GStreamer's parser), the pixel format
// table, plane geometry.
#include "raw_video_caps.hpp"

#include "rdmastream_cli/pixel_formats.hpp"
#include "rdmastream_cli/plane_geometry.hpp"
#include "rdmastream_cli/raw_caps.hpp"

#include "rdmastream/error.hpp"

extern "C" {
#include <libavutil/pixdesc.h>
}

#include <gtest/gtest.h>

namespace cli = rdmastream::cli;

TEST(Caps, RoundTripShortForm) {
    cli::RawVideoCaps c;
    c.format = AV_PIX_FMT_YUV420P10LE;
    c.width = 1920;
    c.height = 1080;
    c.framerate = {30000, 1001};
    c.pixel_aspect_ratio = {1, 1};
    const std::string s = cli::to_caps_string(c);
    EXPECT_EQ(s, "video/x-raw,format=I420_10LE,width=1920,height=1080,framerate=30000/1001,pixel-aspect-ratio=1/1");
    const cli::RawVideoCaps back = cli::parse_caps_string(s);
    EXPECT_EQ(back.format, AV_PIX_FMT_YUV420P10LE);
    EXPECT_EQ(back.width, 1920);
    EXPECT_EQ(back.height, 1080);
    EXPECT_EQ(back.framerate.num, 30000);
    EXPECT_EQ(back.framerate.den, 1001);
}

TEST(Caps, ParsesWhatGstCapsToStringWrites) {
    const auto c = cli::parse_caps_string("video/x-raw, format=(string)NV12, width=(int)640, height=(int)480, "
                                          "interlace-mode=(string)progressive, framerate=(fraction)25/1");
    EXPECT_EQ(c.format, AV_PIX_FMT_NV12);
    EXPECT_EQ(c.width, 640);
    EXPECT_EQ(c.height, 480);
    EXPECT_EQ(c.framerate.num, 25);
    EXPECT_FALSE(c.interlaced);
}

TEST(Caps, RefusesWhatIsNotRawVideo) {
    EXPECT_THROW(cli::parse_caps_string("video/x-h264,stream-format=byte-stream"), rdmastream::ProtocolError);
    EXPECT_THROW(cli::parse_caps_string("video/x-raw,format=WEIRD,width=2,height=2"), rdmastream::ProtocolError);
    EXPECT_THROW(cli::parse_caps_string("video/x-raw,format=I420"), rdmastream::ProtocolError);
}

TEST(Caps, FormatWithoutGstNameIsAUserError) {
    cli::RawVideoCaps c;
    c.format = AV_PIX_FMT_PAL8;
    c.width = c.height = 2;
    EXPECT_THROW(cli::to_caps_string(c), rdmastream::UserError);
}

TEST(PixelFormats, TableReadsBothWays) {
    for (const auto fmt : {AV_PIX_FMT_YUV420P, AV_PIX_FMT_NV12, AV_PIX_FMT_RGBA, AV_PIX_FMT_BGR0,
                           AV_PIX_FMT_YUV422P10LE, AV_PIX_FMT_GBRP, AV_PIX_FMT_RGB24}) {
        const auto name = cli::gst_format_name(fmt);
        ASSERT_TRUE(name) << av_get_pix_fmt_name(fmt);
        EXPECT_EQ(cli::av_pixel_format(*name), fmt) << *name;
    }
    EXPECT_EQ(cli::gst_format_name(AV_PIX_FMT_YUVJ420P), "I420"); // same bytes; the range is colorimetry
    EXPECT_EQ(cli::av_pixel_format("I420"), AV_PIX_FMT_YUV420P);
}

TEST(PlaneGeometry, OddSizeRoundsChromaUp) {
    const auto g = cli::frame_geometry(AV_PIX_FMT_YUV420P, 321, 241);
    ASSERT_EQ(g.plane_count, 3);
    EXPECT_EQ(g.planes[0].row_bytes, 321u);
    EXPECT_EQ(g.planes[0].rows, 241);
    EXPECT_EQ(g.planes[1].row_bytes, 161u);
    EXPECT_EQ(g.planes[1].rows, 121);
    EXPECT_EQ(g.packed_size, 321u * 241 + 2u * 161 * 121);
}

TEST(PlaneGeometry, TenBitAndPacked) {
    EXPECT_EQ(cli::frame_geometry(AV_PIX_FMT_YUV422P10LE, 320, 240).packed_size, 320u * 240 * 2 * 2);
    const auto rgb = cli::frame_geometry(AV_PIX_FMT_RGB24, 5, 3);
    EXPECT_EQ(rgb.plane_count, 1);
    EXPECT_EQ(rgb.planes[0].row_bytes, 15u);
}
