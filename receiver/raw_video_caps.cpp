// SPDX-License-Identifier: LGPL-2.1-or-later
#include "raw_video_caps.hpp"
#include "gst_ptr.hpp"

#include "rdmastream_cli/pixel_formats.hpp"

#include "rdmastream/error.hpp"

#include <gst/video/video.h>

#include <fmt/format.h>

namespace rdmastream::cli {
namespace {

// A fraction field; absent: 0/1. GStreamer reads "1/0" as a string, not a
// fraction, and moves a negative denominator's sign to the numerator
// ("30/-1" is -30/1): FFmpeg's time bases and aspect ratios take neither.
AVRational fraction(const GstStructure* s, const char* field, const std::string& caps) {
    const GValue* v = gst_structure_get_value(s, field);
    if (v == nullptr) return AVRational{0, 1};
    if (GST_VALUE_HOLDS_FRACTION(v) && gst_value_get_fraction_numerator(v) >= 0) {
        return AVRational{gst_value_get_fraction_numerator(v), gst_value_get_fraction_denominator(v)};
    }
    const GCharPtr value(gst_value_serialize(v));
    throw ProtocolError(fmt::format("caps '{}': {} '{}' is not a fraction n/d with n >= 0 and d > 0", caps, field,
                                    value ? value.get() : "?"));
}

} // namespace

RawVideoCaps raw_video_caps(const GstCaps* caps, const std::string& text) {
    // Frames in memory of another kind (memory:DMABuf, ...) are not what a
    // ring slot holds.
    const GstStructure* s = gst_caps_get_size(caps) > 0 ? gst_caps_get_structure(caps, 0) : nullptr;
    const GstCapsFeatures* features = s != nullptr ? gst_caps_get_features(caps, 0) : nullptr;
    if (s == nullptr || !gst_structure_has_name(s, "video/x-raw") ||
        (features != nullptr && !gst_caps_features_is_equal(features, GST_CAPS_FEATURES_MEMORY_SYSTEM_MEMORY))) {
        throw ProtocolError(fmt::format("the sender's caps '{}' are not raw video (video/x-raw): rdmarecv "
                                        "writes raw frames only",
                                        text));
    }
    RawVideoCaps out;
    const char* format = gst_structure_get_string(s, "format");
    if (format != nullptr) {
        out.format = av_pixel_format(format);
        if (out.format == AV_PIX_FMT_NONE) {
            throw ProtocolError(fmt::format("caps '{}': rdmarecv has no FFmpeg pixel format for GStreamer "
                                            "format {}",
                                            text, format));
        }
    }
    out.framerate = fraction(s, "framerate", text);
    out.pixel_aspect_ratio = fraction(s, "pixel-aspect-ratio", text);
    // As GstVideoInfo reads it: absent, or a mode GStreamer does not know, is progressive.
    const char* mode = gst_structure_get_string(s, "interlace-mode");
    out.interlaced = mode != nullptr && gst_video_interlace_mode_from_string(mode) != GST_VIDEO_INTERLACE_MODE_PROGRESSIVE;
    if (out.format == AV_PIX_FMT_NONE || !gst_structure_get_int(s, "width", &out.width) ||
        !gst_structure_get_int(s, "height", &out.height) || out.width <= 0 || out.height <= 0) {
        throw ProtocolError(fmt::format("caps '{}' lack a format, width or height", text));
    }
    return out;
}

RawVideoCaps parse_caps_string(const std::string& caps) {
    if (!gst_is_initialized()) gst_init(nullptr, nullptr); // GStreamer's parser needs no plugin
    const GstCapsPtr parsed(gst_caps_from_string(caps.c_str()));
    if (!parsed || gst_caps_get_size(parsed.get()) == 0) { // NULL, EMPTY or ANY
        throw ProtocolError(fmt::format("caps '{}': GStreamer cannot read them", caps));
    }
    if (gst_caps_get_size(parsed.get()) > 1) {
        throw ProtocolError(fmt::format("caps '{}' hold more than one structure: they are not fixed", caps));
    }
    return raw_video_caps(parsed.get(), caps);
}

} // namespace rdmastream::cli
