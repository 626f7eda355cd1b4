// SPDX-License-Identifier: LGPL-2.1-or-later
// A sender's raw audio caps as rdmarecv's outputs read them, from what
// GStreamer parsed (the GstCaps FrameLayout holds, the same --gst's
// elements read): the sample format (by GStreamer's name and layout), the
// rate, the channels and their positions. Writing them is common/'s
// audio_caps.hpp: rdmasend announces them without GStreamer.
#pragma once

#include "rdmastream_cli/audio_caps.hpp"

#include <gst/gst.h>

#include <string>

namespace rdmastream::cli {

// Whether `caps` are audio/x-raw (in system memory): then raw_audio_caps
// reads them, or refuses them.
bool is_raw_audio(const GstCaps* caps) noexcept;

// From `caps` as GStreamer read them (one structure); `text`, the string
// they were read from, is for messages. Throws ProtocolError for a format
// rdmarecv does not know (U8, S16LE, S32LE, F32LE, F64LE), a layout other
// than interleaved or non-interleaved, a rate outside 1..768000, channels
// outside 1..64, or a channel-mask that is not a bitmask with one bit per
// channel. Absent, the layout is interleaved and the mask 0 (GStreamer's
// defaults: mono or stereo, else unpositioned).
RawAudioCaps raw_audio_caps(const GstCaps* caps, const std::string& text);

} // namespace rdmastream::cli
