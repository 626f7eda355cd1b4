// SPDX-License-Identifier: LGPL-2.1-or-later
// Where a stream's time is, absolutely: every frame's pts is on the
// sender's stream clock, and the anchor says which instant of an absolute
// clock (TAI, or the realtime clock where TAI is not set) pts 0 is. Two
// receivers, or a receiver and other sources on the same PTP or NTP time,
// line their outputs up by it.
#pragma once

#include <cstdint>

namespace rdmastream {

enum class AnchorClock : std::uint8_t {
    kRealtime = 1, // CLOCK_REALTIME: ns since the Unix epoch, UTC (leap seconds not counted)
    kTai = 2,      // CLOCK_TAI: ns since the Unix epoch, TAI (the host's kernel knows its offset to UTC)
};
const char* name(AnchorClock clock) noexcept; // "realtime", "TAI"

struct ClockAnchor {
    AnchorClock clock = AnchorClock::kRealtime;
    std::int64_t pts0_ns = 0; // that clock's reading, in ns, at the instant of pts 0
    // The sender's clock was disciplined (NTP or PTP) when it said this, as
    // its kernel reports (adjtimex: not STA_UNSYNC); else the anchor is only
    // as good as the sender's free-running clock.
    bool synchronized = false;
};

// The anchor of a stream whose frame with pts `pts_ns` is presented now,
// read off this host's clocks: TAI where the kernel knows the TAI offset,
// else realtime.
ClockAnchor anchor_now(std::int64_t pts_ns) noexcept;

} // namespace rdmastream
