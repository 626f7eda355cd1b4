// SPDX-License-Identifier: LGPL-2.1-or-later
#include "raw_audio_caps.hpp"

#include "rdmastream/error.hpp"

#include <fmt/format.h>

#include <bit>
#include <cstring>

namespace rdmastream::cli {

bool is_raw_audio(const GstCaps* caps) noexcept {
    if (gst_caps_get_size(caps) == 0) return false;
    const GstCapsFeatures* features = gst_caps_get_features(caps, 0);
    return gst_structure_has_name(gst_caps_get_structure(caps, 0), "audio/x-raw") &&
           (features == nullptr || gst_caps_features_is_equal(features, GST_CAPS_FEATURES_MEMORY_SYSTEM_MEMORY));
}

RawAudioCaps raw_audio_caps(const GstCaps* caps, const std::string& text) {
    const GstStructure* s = gst_caps_get_structure(caps, 0);
    const char* format = gst_structure_get_string(s, "format");
    const char* layout = gst_structure_get_string(s, "layout");
    if (layout != nullptr && std::strcmp(layout, "interleaved") != 0 && std::strcmp(layout, "non-interleaved") != 0) {
        throw ProtocolError(fmt::format("caps '{}': layout {} is neither interleaved nor non-interleaved", text,
                                        layout));
    }
    const bool planar = layout != nullptr && std::strcmp(layout, "non-interleaved") == 0;
    RawAudioCaps out;
    out.format = format != nullptr ? av_sample_format(format, planar) : AV_SAMPLE_FMT_NONE;
    if (out.format == AV_SAMPLE_FMT_NONE) {
        throw ProtocolError(fmt::format("caps '{}': rdmarecv takes audio in U8, S16LE, S32LE, F32LE or F64LE, not {}",
                                        text, format != nullptr ? format : "(no format)"));
    }
    if (!gst_structure_get_int(s, "rate", &out.rate) || out.rate < 1 || out.rate > kMaxAudioRate) {
        throw ProtocolError(fmt::format("caps '{}': the rate must be an integer from 1 to {}", text, kMaxAudioRate));
    }
    if (!gst_structure_get_int(s, "channels", &out.channels) || out.channels < 1 ||
        out.channels > kMaxAudioChannels) {
        throw ProtocolError(fmt::format("caps '{}': channels must be an integer from 1 to {}", text,
                                        kMaxAudioChannels));
    }
    if (gst_structure_has_field(s, "channel-mask")) {
        guint64 mask = 0;
        if (!gst_structure_get(s, "channel-mask", GST_TYPE_BITMASK, &mask, nullptr)) {
            throw ProtocolError(fmt::format("caps '{}': channel-mask is not a bitmask", text));
        }
        if (mask != 0 && std::popcount(mask) != out.channels) {
            throw ProtocolError(fmt::format("caps '{}': channel-mask 0x{:016x} places {} channels, not {}", text, mask,
                                            std::popcount(mask), out.channels));
        }
        out.channel_mask = mask;
    } else if (out.channels == 2) {
        out.channel_mask = 0x3; // GStreamer's default: front left, front right
    }
    return out;
}

} // namespace rdmastream::cli
