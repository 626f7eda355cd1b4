// SPDX-License-Identifier: LGPL-2.1-or-later
// PathWait (datapath/path_wait.hpp): one wait over two paths' datapaths
// wakes for whichever path has something (a message, a hang-up) and says
// which, sleeps (no CPU) while both are idle, and ends on the stream end's
// Waker or its deadline; the same spinning in busy mode.
#include "memory_fabric.hpp"

#include "datapath/path_wait.hpp"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <time.h>

#include <array>
#include <chrono>
#include <thread>

namespace rdmastream::harness {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// Two fabrics, a path each: end 0 of each is waited on; end 1 sends.
struct TwoPaths {
    explicit TwoPaths(PollMode mode) {
        for (std::size_t p = 0; p < 2; ++p) {
            near[p] = fabric[p].end(0, mode, nullptr);
            far[p] = fabric[p].end(1, mode, nullptr);
            memory[p].emplace(near[p]->register_memory(4096, IBV_ACCESS_LOCAL_WRITE));
            ibv_sge sge{memory[p]->addr(), 1024, memory[p]->lkey()};
            ibv_recv_wr wr{};
            wr.sg_list = &sge;
            wr.num_sge = 1;
            near[p]->post_recv(wr, "recv");
            out_memory[p].emplace(far[p]->register_memory(4096, 0));
        }
    }
    // A keepalive from path p's far end to its near end.
    void send(std::size_t p) {
        far[p]->post_control(wire::Control::kKeepalive, *out_memory[p], 0, 1, "send");
    }
    std::array<MemoryFabric, 2> fabric;
    std::array<std::unique_ptr<Datapath>, 2> near, far;
    std::array<std::optional<RegisteredRegion>, 2> memory, out_memory;
    std::array<std::array<ibv_wc, 4>, 2> wcs{};
    std::array<Datapath*, 2> paths() { return {near[0].get(), near[1].get()}; }
    std::array<std::span<ibv_wc>, 2> outs() { return {std::span<ibv_wc>(wcs[0]), std::span<ibv_wc>(wcs[1])}; }
};

double thread_cpu_ms() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
}

void wakes_on_the_path_that_has_something(PollMode mode) {
    TwoPaths t(mode);
    Waker waker;
    PathWait wait(mode, &waker);
    const auto paths = t.paths();
    const auto outs = t.outs();
    std::thread far([&] {
        std::this_thread::sleep_for(30ms);
        t.send(1); // path B's message
    });
    const auto start = Clock::now();
    PathWait::Woke w = wait.wait(paths, outs, start + 5s);
    far.join();
    ASSERT_EQ(w.kind, PathWait::Woke::kPaths);
    EXPECT_FALSE(w.paths[0].has_value());
    ASSERT_TRUE(w.paths[1].has_value());
    EXPECT_EQ(w.paths[1]->kind, Waited::kCompletions);
    EXPECT_EQ(t.wcs[1][0].opcode, IBV_WC_RECV);
    EXPECT_LT(Clock::now() - start, 2s);

    // Then path A's hang-up.
    t.far[0]->disconnect();
    w = wait.wait(paths, outs, Clock::now() + 5s);
    ASSERT_EQ(w.kind, PathWait::Woke::kPaths);
    ASSERT_TRUE(w.paths[0].has_value());
    EXPECT_EQ(w.paths[0]->kind, Waited::kCmEvent);
    EXPECT_FALSE(w.paths[1].has_value());
}

TEST(PathWait, WakesOnThePathThatHasSomethingAndSaysWhich) { wakes_on_the_path_that_has_something(PollMode::kEvent); }
TEST(PathWait, WakesOnThePathThatHasSomethingSpinning) { wakes_on_the_path_that_has_something(PollMode::kBusy); }

TEST(PathWait, SleepsWithoutCpuWhileBothPathsAreIdleUntilItsDeadline) {
    TwoPaths t(PollMode::kEvent);
    PathWait wait(PollMode::kEvent, nullptr);
    const auto paths = t.paths();
    const auto outs = t.outs();
    const double cpu0 = thread_cpu_ms();
    const auto start = Clock::now();
    const PathWait::Woke w = wait.wait(paths, outs, start + 200ms);
    EXPECT_EQ(w.kind, PathWait::Woke::kTimeout);
    EXPECT_GE(Clock::now() - start, 200ms);
    EXPECT_LT(thread_cpu_ms() - cpu0, 50.0); // asleep in poll(2), not spinning
}

TEST(PathWait, TheStreamEndsWakerEndsTheWait) {
    TwoPaths t(PollMode::kEvent);
    Waker waker;
    PathWait wait(PollMode::kEvent, &waker);
    const auto paths = t.paths();
    const auto outs = t.outs();
    std::thread other([&] {
        std::this_thread::sleep_for(30ms);
        waker.wake();
    });
    const auto start = Clock::now();
    const PathWait::Woke w = wait.wait(paths, outs, start + 5s);
    other.join();
    EXPECT_EQ(w.kind, PathWait::Woke::kWoken);
    EXPECT_LT(Clock::now() - start, 2s);
}

TEST(PathWait, WhatIsQueuedAlreadyComesWithoutASleep) {
    TwoPaths t(PollMode::kEvent);
    PathWait wait(PollMode::kEvent, nullptr);
    t.send(0);
    t.send(1);
    std::this_thread::sleep_for(20ms); // both delivered
    const auto paths = t.paths();
    const auto outs = t.outs();
    const PathWait::Woke w = wait.wait(paths, outs, Clock::now() + 5s);
    ASSERT_EQ(w.kind, PathWait::Woke::kPaths);
    EXPECT_TRUE(w.paths[0].has_value());
    EXPECT_TRUE(w.paths[1].has_value());
}

} // namespace
} // namespace rdmastream::harness
