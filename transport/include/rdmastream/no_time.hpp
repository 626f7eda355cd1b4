// SPDX-License-Identifier: LGPL-2.1-or-later
// The one "no timestamp" value: a frame's pts or duration that the source
// did not give. On the wire (SlotHeader::pts, ::duration) and in every
// program and element; GStreamer's GST_CLOCK_TIME_NONE maps to it.
#pragma once

#include <cstdint>
#include <limits>

namespace rdmastream {

inline constexpr std::int64_t kNoTime = std::numeric_limits<std::int64_t>::min();

} // namespace rdmastream
