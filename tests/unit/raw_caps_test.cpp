// SPDX-License-Identifier: LGPL-2.1-or-later
// parse_caps_string (receiver/raw_video_caps.hpp) on caps off the wire:
// what rdmarecv accepts it passes on to FFmpeg and to its plane checks, so
// a caps string is read the way GStreamer reads it (with its parser), or
// refused. Each case was a fuzz finding (tests/fuzz/fuzz_raw_caps,
// fuzz_caps_agree) against the hand parser rdmarecv had before.
#include "raw_video_caps.hpp"

#include "rdmastream/error.hpp"

#include <gtest/gtest.h>

#include <string>

namespace cli = rdmastream::cli;
using rdmastream::ProtocolError;

// fuzz_raw_caps: "framerate=(fraction)1/0" came back as the AVRational 1/0.
// (GStreamer reads "1/0" as a string, "30/-1" as -30/1.)
TEST(RawCaps, RefusesFractionsWithoutAPositiveDenominator) {
    EXPECT_THROW(cli::parse_caps_string("video/x-raw,format=I420,width=2,height=2,framerate=1/0"), ProtocolError);
    EXPECT_THROW(cli::parse_caps_string("video/x-raw,format=I420,width=2,height=2,framerate=30/-1"), ProtocolError);
    EXPECT_THROW(cli::parse_caps_string("video/x-raw,format=I420,width=2,height=2,pixel-aspect-ratio=1/0"),
                 ProtocolError);
    const auto c = cli::parse_caps_string("video/x-raw,format=I420,width=2,height=2,framerate=0/1");
    EXPECT_EQ(c.framerate.num, 0);
    EXPECT_EQ(c.framerate.den, 1);
}

// fuzz_caps_agree: "height=063" is 51 to GStreamer (octal), 63 to the
// decimal reader rdmarecv had, which then refused such integers. Read with
// GStreamer's parser they are what GStreamer and every element reads:
// C's notation, words ("max") included; text it cannot read is refused.
TEST(RawCaps, ReadsIntegersAsGStreamerDoes) {
    const auto height = [](const char* v) {
        return cli::parse_caps_string(std::string("video/x-raw,format=I420,width=64,height=") + v).height;
    };
    EXPECT_EQ(height("063"), 51);
    EXPECT_EQ(height("(int)0063"), 51);
    EXPECT_EQ(height("0x3f"), 63);
    EXPECT_EQ(height("+63"), 63);
    EXPECT_EQ(height("(int)63"), 63);
    EXPECT_EQ(height("max"), G_MAXINT); // FrameLayout refuses the picture (too large) before any output reads it
    EXPECT_THROW(height("6 3"), ProtocolError);
}

// A field inside a quoted string or a nested structure is not a field of
// the caps: GStreamer reads height 240 here, and so must rdmarecv (it
// checked payloads against 2 rows while downstream read 240).
TEST(RawCaps, ReadsOnlyTopLevelFields) {
    const auto quoted = cli::parse_caps_string("video/x-raw,format=I420,width=320,height=240,foo=\"x,height=2,y\"");
    EXPECT_EQ(quoted.height, 240);
    const auto nested = cli::parse_caps_string("video/x-raw,format=I420,width=320,height=240,s=[sub, height=2, x=y]");
    EXPECT_EQ(nested.height, 240);
    const auto escaped = cli::parse_caps_string("video/x-raw,format=I420,width=320,height=240,s=\"a\\\",height=2\"");
    EXPECT_EQ(escaped.height, 240);
}

TEST(RawCaps, RefusesMoreThanOneStructureAndUnbalancedText) {
    EXPECT_THROW(cli::parse_caps_string("video/x-raw,format=I420,width=2,height=2;video/x-raw,height=4"),
                 ProtocolError);
    EXPECT_NO_THROW(cli::parse_caps_string("video/x-raw,format=I420,width=2,height=2;"));
    EXPECT_THROW(cli::parse_caps_string("video/x-raw,format=I420,width=2,height=2,s=\"open"), ProtocolError);
    EXPECT_THROW(cli::parse_caps_string("video/x-raw,format=I420,width=2,height=2,s=[a, b=c"), ProtocolError);
    EXPECT_THROW(cli::parse_caps_string("video/x-raw,format=I420,width=2,height=2,s=a]"), ProtocolError);
}
