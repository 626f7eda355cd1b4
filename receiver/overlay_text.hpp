// SPDX-License-Identifier: LGPL-2.1-or-later
// The text rdmarecv --gst puts on an element named `rdmastats` (one with a
// string property "text", e.g. textoverlay) for each frame. One function,
// so that more per-frame facts are added in one place.
#pragma once

#include "rdmastream/frame.hpp"

#include <cstddef>
#include <span>
#include <string_view>

namespace rdmastream::cli {

// Writes "frame N, pts S.mmm s, latency L ms" (what the frame offers) into `buffer`, NUL
// terminated, cut short if it does not fit; returns the text without the
// NUL. No allocation: it runs per frame.
std::string_view overlay_text(const ReceivedFrame& frame, std::span<char> buffer);

} // namespace rdmastream::cli
