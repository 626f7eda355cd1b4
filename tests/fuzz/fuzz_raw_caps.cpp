// SPDX-License-Identifier: LGPL-2.1-or-later
// receiver/raw_video_caps.cpp: parse_caps_string on any caps string, as
// rdmarecv reads the sender's caps (with GStreamer's parser). Input: the
// caps, as the wire carries them. Accepted caps name a pixel format and a
// positive size, their fractions have a positive denominator, and they mean
// the same after a round trip through to_caps_string (common/, rdmasend's).
#include "fuzz_gst.hpp"
#include "fuzz_input.hpp"

#include "raw_video_caps.hpp"

#include <string>

namespace cli = rdmastream::cli;
using rdmastream::fuzz::accepted;

namespace {
bool same(AVRational a, AVRational b) { return a.num == b.num && a.den == b.den; }
} // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    rdmastream::fuzz::init_gstreamer();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    if (!rdmastream::fuzz::wire_caps(text)) {
        return -1; // never off the wire: not worth keeping
    }
    if (!rdmastream::fuzz::balanced(text)) {
        return -1; // GStreamer leaks on these (fuzz_gst.hpp)
    }
    const auto c = accepted([&] { return cli::parse_caps_string(text); });
    if (!c) {
        return 0;
    }
    FUZZ_CHECK(c->format != AV_PIX_FMT_NONE && c->width > 0 && c->height > 0);
    FUZZ_CHECK(c->framerate.den > 0 && c->pixel_aspect_ratio.den > 0);
    const cli::RawVideoCaps back = cli::parse_caps_string(cli::to_caps_string(*c));
    FUZZ_CHECK(back.format == c->format && back.width == c->width && back.height == c->height);
    FUZZ_CHECK(same(back.framerate, c->framerate) && back.interlaced == c->interlaced);
    FUZZ_CHECK(same(back.pixel_aspect_ratio, c->pixel_aspect_ratio) || c->pixel_aspect_ratio.num <= 0);
    return 0;
}
