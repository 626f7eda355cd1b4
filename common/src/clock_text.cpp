// SPDX-License-Identifier: LGPL-2.1-or-later
#include "rdmastream_cli/clock_text.hpp"

#include <fmt/format.h>

#include <ctime>

namespace rdmastream::cli {

std::string describe(const ClockAnchor& a) {
    // Floor division: an instant before the epoch keeps a positive fraction.
    std::int64_t seconds = a.pts0_ns / 1'000'000'000, nanos = a.pts0_ns % 1'000'000'000;
    if (nanos < 0) {
        nanos += 1'000'000'000;
        --seconds;
    }
    const std::time_t t = static_cast<std::time_t>(seconds);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char date[32];
    std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", &tm);
    return fmt::format("{}.{:09} {} ({}, {})", date, nanos, a.clock == AnchorClock::kTai ? "TAI" : "UTC", name(a.clock),
                       a.synchronized ? "synchronized" : "free-running");
}

} // namespace rdmastream::cli
