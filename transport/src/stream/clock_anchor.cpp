// SPDX-License-Identifier: LGPL-2.1-or-later
// Reading a ClockAnchor off this host's clocks (rdmastream/clock_anchor.hpp).
#include "rdmastream/clock_anchor.hpp"

#include <sys/timex.h>
#include <time.h>

namespace rdmastream {

const char* name(AnchorClock clock) noexcept {
    switch (clock) {
    case AnchorClock::kRealtime: return "realtime";
    case AnchorClock::kTai: return "TAI";
    }
    return "unknown";
}

ClockAnchor anchor_now(std::int64_t pts_ns) noexcept {
    // adjtimex with no mode bits only reads: the TAI offset (0 when nobody
    // set it, e.g. no PTP or NTP daemon with leap second data) and whether
    // the clock is disciplined.
    timex tx{};
    const int state = adjtimex(&tx);
    ClockAnchor a;
    a.synchronized = state != -1 && state != TIME_ERROR && (tx.status & STA_UNSYNC) == 0;
    a.clock = state != -1 && tx.tai != 0 ? AnchorClock::kTai : AnchorClock::kRealtime;
    timespec now{};
    clock_gettime(a.clock == AnchorClock::kTai ? CLOCK_TAI : CLOCK_REALTIME, &now);
    a.pts0_ns = static_cast<std::int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec - pts_ns;
    return a;
}

} // namespace rdmastream
