// SPDX-License-Identifier: LGPL-2.1-or-later
// The receive path makes no heap call per frame. A sender thread streams
// over the in-memory fabric; the test's thread receives and releases every
// frame, and its heap calls (heap_calls.hpp) from the kWarmUp-th frame to
// the last must be none: a frame's completion, checks and hand-out, its
// release and the coalesced credits, the waits (event and busy), each
// flow of a programme, side data, the clock anchor, and over two paths the
// merge with the second copy compared and given back, and each path's
// counters asked for (into a caller's vector). The first frames may
// allocate (a format, a flow's queues); they are not per frame. The same on
// the bed, for the programs: docs/benchmarks.md, "Per-frame budget".
#include "heap_calls.hpp"
#include "stream_pair.hpp"

#include "rdmastream/side_data.hpp"
#include "stream/path_receiver.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <thread>

namespace rdmastream::harness {
namespace {

using namespace std::chrono_literals;

constexpr std::uint32_t kSlots = 8;
constexpr std::uint64_t kFrames = 400;
// By then every slot of every flow (flow 0's 8 and another flow's 16,
// RingConfig::flow_slots) has carried a frame, on each path.
constexpr std::uint64_t kWarmUp = 100;
constexpr std::size_t kPayload = 1000;

wire::StreamFormat format_of(std::uint8_t flow, const char* caps) {
    wire::StreamFormat f;
    f.flow = flow;
    f.id = 1;
    f.max_frame_size = kPayload;
    f.max_side_data = 64;
    f.caps = caps;
    return f;
}

// What the receiving thread allocated and freed while it took frames
// kWarmUp..last, and how many frames it took in all.
struct Steady {
    HeapCalls calls;
    std::uint64_t frames = 0;
};

// Takes frames until the end of stream through `next` (an optional
// ReceivedFrame, nullopt at the end), giving each back through `release`.
// Nothing in the loop allocates of its own: no gtest assertion until after.
template <typename Next, typename Release>
Steady receive_all(Next next, Release release) {
    HeapCalls from{}, to{};
    std::uint64_t n = 0;
    while (std::optional<ReceivedFrame> f = next()) {
        release(f->slot);
        if (++n == kWarmUp) from = heap_calls_of_this_thread();
        to = heap_calls_of_this_thread(); // after the last frame's release: the end's own calls left out
    }
    return {{to.allocations - from.allocations, to.frees - from.frees}, n};
}

// One path: `flows` flows, every frame of every flow with captions and a
// timecode, a clock anchor before the first.
void one_path(PollMode mode, std::uint8_t flows) {
    SenderOptions so;
    so.poll_mode = mode;
    auto p = connect_pair(ring(kSlots, mode), so);
    RegisteredRegion mem = p.tx->register_memory(kPayload, 0);
    const std::byte cc[] = {std::byte{0xfc}, std::byte{0x94}, std::byte{0x2c}};
    const std::byte tc[] = {std::byte{1}, std::byte{2}, std::byte{3}, std::byte{4}};
    const SideData side[] = {{SideDataKind::kCaptions, cc}, {SideDataKind::kTimecode, tc}};
    std::thread tx([&] {
        p.tx->set_format(format_of(0, "video/x-test"), 2s);
        if (flows > 1) p.tx->set_format(format_of(1, "audio/x-test"), 2s);
        p.tx->set_clock(ClockAnchor{AnchorClock::kRealtime, 1'000'000'000, false}, 2s);
        for (std::uint64_t i = 0; i < kFrames; ++i) {
            FrameMeta m;
            m.pts = static_cast<std::int64_t>(i);
            m.side_data = side;
            m.flow = static_cast<std::uint8_t>(i % flows);
            p.tx->send(mem.bytes(), mem.lkey(), m, i, 2s);
        }
        p.tx->finish(2s);
    });
    const Steady s = receive_all([&] { return p.rx->next(5s); }, [&](std::uint16_t slot) { p.rx->release(slot); });
    tx.join();
    EXPECT_EQ(s.frames, kFrames);
    EXPECT_EQ(s.calls.allocations, 0u) << "heap allocations over " << kFrames - kWarmUp << " frames";
    EXPECT_EQ(s.calls.frees, 0u) << "frees over " << kFrames - kWarmUp << " frames";
}

TEST(HeapPerFrame, NoneOnOnePathEventMode) { one_path(PollMode::kEvent, 1); }
TEST(HeapPerFrame, NoneOnOnePathBusyMode) { one_path(PollMode::kBusy, 1); }
TEST(HeapPerFrame, NoneForAProgrammesTwoFlows) { one_path(PollMode::kEvent, 2); }

// Two paths, each with its fabric and sender; every frame goes on both, so
// PathReceiver hands out the first copy and compares the second with it
// (its header, and its bytes if the first is still held) before giving it
// back. Each path's counters are asked for after every frame, into one
// vector, as rdmasrc publishes them (Receiver::paths(into)).
void two_paths(PollMode mode) {
    std::array<MemoryFabric, 2> fabric;
    std::array<std::unique_ptr<FrameReceiver>, 2> rxs;
    std::array<std::unique_ptr<FrameSender>, 2> tx;
    std::array<std::optional<RegisteredRegion>, 2> mem;
    for (std::size_t i = 0; i < 2; ++i) {
        const RingConfig r = ring(kSlots, mode);
        rxs[i] = std::make_unique<FrameReceiver>(fabric[i].end(0, mode, nullptr), r);
        SenderOptions so;
        so.poll_mode = mode;
        tx[i] = std::make_unique<FrameSender>(fabric[i].end(1, mode), rxs[i]->ring_advert(), so);
        mem[i].emplace(tx[i]->register_memory(kPayload, 0));
    }
    PathReceiver::Options o;
    o.poll_mode = mode;
    o.log = [](const std::string& line) { ADD_FAILURE() << line; }; // a path lost, a copy that differs
    PathReceiver rx(std::move(rxs), o);
    std::vector<PathReport> reports;
    std::thread senders([&] {
        for (std::size_t i = 0; i < 2; ++i) tx[i]->set_format(format_of(0, "video/x-test"), 2s);
        for (std::uint64_t n = 0; n < kFrames; ++n) {
            FrameMeta m;
            m.pts = static_cast<std::int64_t>(n);
            for (std::size_t i = 0; i < 2; ++i) tx[i]->send(mem[i]->bytes(), mem[i]->lkey(), m, n, 2s);
        }
        for (std::size_t i = 0; i < 2; ++i) tx[i]->finish(2s);
    });
    const Steady s = receive_all(
        [&]() -> std::optional<ReceivedFrame> {
            for (;;) {
                PathReceiver::Arrival a = rx.wait_frame(5s);
                if (a.kind == PathReceiver::Arrival::kFrame) return a.frame;
                if (a.kind == PathReceiver::Arrival::kEnd) return std::nullopt;
            }
        },
        [&](std::uint16_t slot) {
            rx.release(slot);
            rx.report(reports);
        });
    senders.join();
    EXPECT_EQ(s.frames, kFrames);
    ASSERT_EQ(reports.size(), 2u);
    EXPECT_EQ(reports[0].frames_first + reports[1].frames_first, kFrames);
    EXPECT_EQ(s.calls.allocations, 0u) << "heap allocations over " << kFrames - kWarmUp << " frames";
    EXPECT_EQ(s.calls.frees, 0u) << "frees over " << kFrames - kWarmUp << " frames";
}

TEST(HeapPerFrame, NoneOverTwoPathsEventMode) { two_paths(PollMode::kEvent); }
TEST(HeapPerFrame, NoneOverTwoPathsBusyMode) { two_paths(PollMode::kBusy); }

} // namespace
} // namespace rdmastream::harness
