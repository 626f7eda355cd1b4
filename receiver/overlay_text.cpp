// SPDX-License-Identifier: LGPL-2.1-or-later
#include "overlay_text.hpp"

#include "rdmastream/no_time.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace rdmastream::cli {

std::string_view overlay_text(const ReceivedFrame& frame, std::span<char> buffer) {
    if (buffer.empty()) return {};
    const std::size_t room = buffer.size() - 1; // the NUL
    auto r = fmt::format_to_n(buffer.data(), room, "frame {}", frame.header.sequence);
    if (frame.header.pts != kNoTime) {
        const std::size_t used = std::min(r.size, room);
        r = fmt::format_to_n(buffer.data() + used, room - used, ", pts {:.3f} s",
                             static_cast<double>(frame.header.pts) / 1e9);
        r.size += used;
    }
    // One way, sender's post to our arrival, by the two wall clocks: only
    // where they are synchronised (PTP/NTP; the test bed syncs its guests).
    if (frame.header.sent_at_ns != 0 && frame.arrived_at_ns >= frame.header.sent_at_ns) {
        const std::size_t used = std::min(r.size, room);
        r = fmt::format_to_n(buffer.data() + used, room - used, ", latency {:.1f} ms",
                             static_cast<double>(frame.arrived_at_ns - frame.header.sent_at_ns) / 1e6);
        r.size += used;
    }
    const std::size_t n = std::min(r.size, room);
    buffer[n] = '\0';
    return {buffer.data(), n};
}

} // namespace rdmastream::cli
