// SPDX-License-Identifier: LGPL-2.1-or-later
// The wire's time unit as an FFmpeg time base: frame pts and durations
// travel in nanoseconds (docs/protocol.md, slot header), and FFmpeg's
// av_rescale_q moves them to and from a stream's own time base.
#pragma once

extern "C" {
#include <libavutil/rational.h>
}

namespace rdmastream::cli {

inline constexpr AVRational kNanoseconds{1, 1000000000};

} // namespace rdmastream::cli
