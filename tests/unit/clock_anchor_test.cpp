// SPDX-License-Identifier: LGPL-2.1-or-later
// The clock anchor (wire kClock): round trip, refusals by name, and
// anchor_now() read off this host's clocks.
#include "rdmastream/error.hpp"
#include "wire/wire.hpp"

#include <gtest/gtest.h>

#include <time.h>

namespace {

namespace wire = rdmastream::wire;
using rdmastream::AnchorClock;
using rdmastream::ClockAnchor;

std::string clock_refusal(std::span<const std::byte> b) {
    try {
        wire::decode_clock(b);
    } catch (const rdmastream::ProtocolError& e) {
        return e.what();
    }
    return "accepted";
}

TEST(ClockAnchor, RoundTrips) {
    const ClockAnchor a{AnchorClock::kTai, -123456789012345, true};
    const auto b = wire::encode(a);
    const ClockAnchor g = wire::decode_clock(b);
    EXPECT_EQ(g.clock, AnchorClock::kTai);
    EXPECT_EQ(g.pts0_ns, -123456789012345);
    EXPECT_TRUE(g.synchronized);
}

TEST(ClockAnchor, RefusesWhatAPeerMadeUp) {
    auto b = wire::encode(ClockAnchor{});
    auto bad = b;
    bad[6] = std::byte{3};
    EXPECT_EQ(clock_refusal(bad), "clock anchor names clock 3 (1: realtime, 2: TAI)");
    bad = b;
    bad[7] = std::byte{2};
    EXPECT_EQ(clock_refusal(bad), "clock anchor has flags 0x02: bits above 0 are reserved and must be zero");
    bad = b;
    bad[20] = std::byte{1};
    EXPECT_EQ(clock_refusal(bad), "clock anchor has reserved field reserved@16 (offset 20) set to 0x01: it must be zero");
    EXPECT_EQ(clock_refusal(std::span(b).first(20)), "clock anchor too short: 20 bytes, need 24");
    std::vector<std::byte> longer(b.begin(), b.end());
    longer.push_back(std::byte{0});
    EXPECT_EQ(clock_refusal(longer), "clock anchor of 25 bytes (it has 24)");
}

// anchor_now(p): the clock's reading now, less p.
TEST(ClockAnchor, NowIsThisHostsClockLessThePts) {
    const ClockAnchor a = rdmastream::anchor_now(5'000'000'000);
    timespec now{};
    clock_gettime(a.clock == AnchorClock::kTai ? CLOCK_TAI : CLOCK_REALTIME, &now);
    const std::int64_t t = static_cast<std::int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
    EXPECT_NEAR(static_cast<double>(t - 5'000'000'000 - a.pts0_ns), 0.0, 1e9); // within a second of now
}

} // namespace
