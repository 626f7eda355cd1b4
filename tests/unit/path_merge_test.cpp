// SPDX-License-Identifier: LGPL-2.1-or-later
// PathMerge (stream/path_merge.hpp): two paths' copies of one stream, each
// frame handed out once, in order, from the first copy; the rules of
// docs/design/two-paths.md, Decision 3, one by one and over random
// interleavings of what two paths bring.
#include "stream/path_merge.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

namespace rdmastream {
namespace {

using namespace std::chrono_literals;
using Clock = PathMerge::Clock;
using Out = PathMerge::Out;

// Everything next() has to say for flow 0 now.
std::vector<Out> drain(PathMerge& m, Clock::time_point now) {
    std::vector<Out> outs;
    while (auto o = m.next(0, now)) outs.push_back(*o);
    return outs;
}

TEST(PathMerge, EachFrameOnceFromTheCopyThatCameFirst) {
    PathMerge m(2, Policy::kLossless, 50ms);
    m.add_flow(0, 8);
    const auto t = Clock::now();
    m.arrive(1, 0, 0, 100, t); // path B first
    m.arrive(0, 0, 0, 200, t + 1us);
    m.arrive(0, 0, 1, 201, t + 2us); // then path A first
    m.arrive(1, 0, 1, 101, t + 3us);
    const std::vector<Out> outs = drain(m, t + 4us);
    ASSERT_EQ(outs.size(), 4u);
    EXPECT_EQ(outs[0].kind, Out::kFrame);
    EXPECT_EQ(outs[0].handle, 100u); // B's frame 0
    EXPECT_EQ(outs[1].kind, Out::kDuplicate);
    EXPECT_EQ(outs[1].handle, 200u); // A's copy of it goes back
    EXPECT_EQ(outs[2].kind, Out::kFrame);
    EXPECT_EQ(outs[2].handle, 201u); // A's frame 1
    EXPECT_EQ(outs[3].kind, Out::kDuplicate);
    EXPECT_EQ(outs[3].handle, 101u);
    EXPECT_EQ(m.counters(0).first, 1u);
    EXPECT_EQ(m.counters(1).first, 1u);
    EXPECT_EQ(m.counters(0).duplicates, 1u);
    EXPECT_EQ(m.counters(1).duplicates, 1u);
    EXPECT_EQ(m.next_number(0), 2u);
}

// Lossless, two paths that each skip frames the other brought (as a sender
// skips on a lagging path what the other delivered), in every order the
// two may interleave: every frame exactly once and in order, every arrival's
// slot back exactly once, the copies counted.
TEST(PathMerge, RandomInterleavingsOfTwoPathsGiveEveryFrameOnceInOrder) {
    std::mt19937 rng(20261204);
    for (int round = 0; round < 200; ++round) {
        constexpr std::uint64_t kFrames = 300;
        std::vector<std::vector<std::uint64_t>> brings(2);
        std::uint64_t both = 0;
        for (std::uint64_t n = 0; n < kFrames; ++n) {
            const auto who = rng() % 3; // A only, B only, both
            if (who != 1) brings[0].push_back(n);
            if (who != 0) brings[1].push_back(n);
            both += who == 2;
        }
        PathMerge m(2, Policy::kLossless, 50ms);
        m.add_flow(0, kFrames);
        std::vector<std::uint64_t> handed;
        std::vector<int> handles_back(2 * kFrames, 0);
        std::size_t at[2] = {0, 0};
        auto t = Clock::now();
        while (at[0] < brings[0].size() || at[1] < brings[1].size()) {
            std::size_t p = rng() % 2;
            if (at[p] == brings[p].size()) p = 1 - p;
            const std::uint64_t n = brings[p][at[p]++];
            m.arrive(p, 0, n, static_cast<std::uint32_t>(p * kFrames + n), t += 1us);
            for (const Out& o : drain(m, t)) {
                ASSERT_NE(o.kind, Out::kGap);
                ++handles_back[o.handle];
                if (o.kind == Out::kFrame) handed.push_back(o.number);
            }
        }
        ASSERT_EQ(handed.size(), kFrames) << "round " << round;
        for (std::uint64_t n = 0; n < kFrames; ++n) ASSERT_EQ(handed[n], n) << "round " << round;
        for (std::size_t p = 0; p < 2; ++p) {
            for (std::uint64_t n : brings[p]) ASSERT_EQ(handles_back[p * kFrames + n], 1) << "round " << round;
        }
        EXPECT_EQ(m.counters(0).duplicates + m.counters(1).duplicates, both);
        EXPECT_EQ(m.counters(0).first + m.counters(1).first, kFrames);
        // A path's sequence skips what it did not bring, up to its last.
        for (std::size_t p = 0; p < 2; ++p) EXPECT_EQ(m.counters(p).missing, brings[p].back() + 1 - brings[p].size());
    }
}

TEST(PathMerge, LosslessWaitsForAPathThatMayStillBringAFrameAndGivesUpOnlyOnceNoneCan) {
    PathMerge m(2, Policy::kLossless, 50ms);
    m.add_flow(0, 8);
    const auto t = Clock::now();
    m.arrive(0, 0, 0, 0, t);
    m.arrive(0, 0, 2, 2, t); // A skipped 1: B may bring it
    EXPECT_EQ(drain(m, t + 1s).size(), 1u); // frame 0 only, however long
    EXPECT_EQ(m.next(0, t + 10s), std::nullopt);
    m.arrive(1, 0, 1, 11, t + 10s);
    const std::vector<Out> outs = drain(m, t + 10s);
    ASSERT_EQ(outs.size(), 2u);
    EXPECT_EQ(outs[0].handle, 11u);
    EXPECT_EQ(outs[1].handle, 2u);
    // Now both are past 3 and neither brought it: a frame a live sender
    // dropped on both (the receiver cannot tell its sender's policy): a gap.
    m.arrive(0, 0, 4, 4, t + 11s);
    m.arrive(1, 0, 5, 15, t + 11s);
    const std::optional<Out> gap = m.next(0, t + 11s);
    ASSERT_TRUE(gap.has_value());
    EXPECT_EQ(gap->kind, Out::kGap);
    EXPECT_EQ(gap->number, 3u);
    EXPECT_EQ(gap->gap_end, 4u);
}

TEST(PathMerge, LiveWaitsAtMostTheSkewThenGivesUpAndALateCopyGoesBack) {
    PathMerge m(2, Policy::kLive, 50ms);
    m.add_flow(0, 8);
    const auto t = Clock::now();
    m.arrive(0, 0, 0, 0, t);
    m.arrive(0, 0, 2, 2, t + 1ms); // 1 may still come on B
    EXPECT_EQ(drain(m, t + 1ms).size(), 1u);
    EXPECT_EQ(m.deadline(0), t + 1ms + 50ms);
    EXPECT_EQ(m.next(0, t + 50ms), std::nullopt);
    std::vector<Out> outs = drain(m, t + 51ms);
    ASSERT_EQ(outs.size(), 2u);
    EXPECT_EQ(outs[0].kind, Out::kGap);
    EXPECT_EQ(outs[0].number, 1u);
    EXPECT_EQ(outs[0].gap_end, 2u);
    EXPECT_EQ(outs[1].kind, Out::kFrame);
    EXPECT_EQ(outs[1].number, 2u);
    m.arrive(1, 0, 1, 11, t + 60ms); // too late: its slot back, nothing out of order
    outs = drain(m, t + 60ms);
    ASSERT_EQ(outs.size(), 1u);
    EXPECT_EQ(outs[0].kind, Out::kDuplicate);
    EXPECT_EQ(outs[0].handle, 11u);
    EXPECT_EQ(m.deadline(0), std::nullopt);
}

TEST(PathMerge, APathThatIsDownIsNotWaitedFor) {
    PathMerge live(2, Policy::kLive, 50ms);
    live.add_flow(0, 8);
    const auto t = Clock::now();
    live.set_up(1, false);
    live.arrive(0, 0, 1, 1, t); // frame 0 will come on no path now
    std::vector<Out> outs = drain(live, t);
    ASSERT_EQ(outs.size(), 2u);
    EXPECT_EQ(outs[0].kind, Out::kGap);
    EXPECT_EQ(outs[1].kind, Out::kFrame);

    PathMerge lossless(2, Policy::kLossless, 50ms);
    lossless.add_flow(0, 8);
    lossless.arrive(1, 0, 0, 10, t); // B brought 0 before it went down: still handed out
    lossless.set_up(1, false);
    lossless.arrive(0, 0, 2, 2, t);
    ASSERT_EQ(lossless.next(0, t)->handle, 10u);
    EXPECT_EQ(lossless.next(0, t)->kind, Out::kGap); // 1: A skipped it, B is gone: no wait
}

TEST(PathMerge, OnePathIsTheStreamAsItCame) {
    PathMerge m(1, Policy::kLive, 50ms);
    m.add_flow(0, 4);
    const auto t = Clock::now();
    m.arrive(0, 0, 0, 0, t);
    m.arrive(0, 0, 3, 3, t); // a live drop of 1 and 2: no other path to wait for
    const std::vector<Out> outs = drain(m, t);
    ASSERT_EQ(outs.size(), 3u);
    EXPECT_EQ(outs[1].kind, Out::kGap);
    EXPECT_EQ(outs[1].gap_end, 3u);
    EXPECT_EQ(m.counters(0).missing, 2u);
    EXPECT_THROW(
        {
            for (std::uint32_t i = 4; i < 9; ++i) m.arrive(0, 0, i, i, t);
        },
        std::logic_error); // more waiting than the path has slots
}

} // namespace
} // namespace rdmastream
