// SPDX-License-Identifier: LGPL-2.1-or-later
// Per-frame side data through a FrameSender and FrameReceiver (over the
// in-memory fabric): it arrives with its frame, copied at send() (a caller
// may reuse its bytes at once, a live frame kept pending included), and
// only where the format declared room for it. And the clock anchor, which
// frames after it are on.
#include "stream_pair.hpp"

#include "rdmastream/error.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

namespace rdmastream::harness {
namespace {

using namespace std::chrono_literals;

std::vector<std::byte> bytes(std::initializer_list<unsigned> v) {
    std::vector<std::byte> out;
    for (unsigned b : v) out.push_back(static_cast<std::byte>(b));
    return out;
}

std::vector<std::byte> copy(std::span<const std::byte> s) { return {s.begin(), s.end()}; }

// Frames of 1 KiB and `room` bytes of side data: within the harness's
// 4 KiB slots unless `room` is large (then the ring grows: a receiver must
// be taking frames to grow it).
wire::StreamFormat format_with_side_data(std::uint32_t room) {
    wire::StreamFormat f;
    f.id = 1;
    f.max_frame_size = 1024;
    f.max_side_data = room;
    f.caps = "application/x-test";
    return f;
}

TEST(SideDataStream, ArrivesWithItsFrameCopiedAtSend) {
    auto p = connect_pair(ring(2), SenderOptions{});
    RegisteredRegion mem = p.tx->register_memory(4096, 0);
    auto cc = bytes({0xfc, 0x94, 0x2c});
    auto tc = bytes({0x01, 0x02, 0x03, 0x04});
    std::thread rx([&] {
        auto f = p.rx->next(2s);
        ASSERT_TRUE(f);
        EXPECT_EQ(f->payload.size(), 100u);
        ASSERT_EQ(f->side_data.size(), 2u);
        EXPECT_EQ(f->side_data[0].kind, SideDataKind::kCaptions);
        EXPECT_EQ(copy(f->side_data[0].bytes), bytes({0xfc, 0x94, 0x2c}));
        EXPECT_EQ(f->side_data[1].kind, SideDataKind::kTimecode);
        EXPECT_EQ(copy(f->side_data[1].bytes), bytes({0x01, 0x02, 0x03, 0x04}));
        p.rx->release(f->slot);
        f = p.rx->next(2s);
        ASSERT_TRUE(f);
        EXPECT_TRUE(f->side_data.empty());
        p.rx->release(f->slot);
        EXPECT_FALSE(p.rx->next(2s)); // end of stream
    });
    p.tx->set_format(format_with_side_data(kDefaultSideDataBytes), 2s); // the ring grows for it
    const SideData sd[] = {{SideDataKind::kCaptions, cc}, {SideDataKind::kTimecode, tc}};
    FrameMeta m;
    m.side_data = sd;
    p.tx->send(mem.bytes().first(100), mem.lkey(), m, 0, 1s);
    std::fill(cc.begin(), cc.end(), std::byte{0}); // copied at send: this changes nothing sent
    p.tx->send(mem.bytes().first(100), mem.lkey(), {}, 1, 1s);
    p.tx->finish(2s);
    rx.join();
}

// Live, one slot: the second frame waits as the pending one; its side data
// must survive the caller reusing the bytes before it goes out.
TEST(SideDataStream, APendingLiveFrameKeepsItsOwn) {
    SenderOptions o;
    o.policy = Policy::kLive;
    auto p = connect_pair(ring(1), o);
    RegisteredRegion mem = p.tx->register_memory(4096, 0);
    p.tx->set_format(format_with_side_data(64), 2s);
    auto first = bytes({0xfc, 0x01, 0x01});
    auto second = bytes({0xfc, 0x02, 0x02});
    const SideData a[] = {{SideDataKind::kCaptions, first}};
    const SideData b[] = {{SideDataKind::kCaptions, second}};
    FrameMeta ma, mb;
    ma.side_data = a;
    mb.side_data = b;
    ASSERT_EQ(p.tx->send(mem.bytes().first(10), mem.lkey(), ma, 0, 0ms), 0u);
    ASSERT_EQ(p.tx->send(mem.bytes().first(10), mem.lkey(), mb, 1, 0ms), 1u); // pending: no credit
    std::fill(second.begin(), second.end(), std::byte{0xee});
    auto f = p.rx->next(1s);
    ASSERT_TRUE(f);
    EXPECT_EQ(copy(f->side_data[0].bytes), bytes({0xfc, 0x01, 0x01}));
    p.rx->release(f->slot);
    std::thread look([&] { EXPECT_THROW(p.rx->wait_frame(20ms), TimeoutError); }); // the credit goes out
    look.join();
    p.tx->progress(); // the pending frame goes
    f = p.rx->next(1s);
    ASSERT_TRUE(f);
    EXPECT_EQ(f->header.sequence, 1u);
    ASSERT_EQ(f->side_data.size(), 1u);
    EXPECT_EQ(copy(f->side_data[0].bytes), bytes({0xfc, 0x02, 0x02}));
}

TEST(SideDataStream, OnlyWhereTheFormatDeclaredRoom) {
    auto p = connect_pair(ring(2), SenderOptions{});
    RegisteredRegion mem = p.tx->register_memory(4096, 0);
    const auto cc = bytes({0xfc, 0x94, 0x2c, 0xfc, 0x94, 0x2c});
    const SideData sd[] = {{SideDataKind::kCaptions, cc}};
    FrameMeta m;
    m.side_data = sd;
    EXPECT_THROW(p.tx->send(mem.bytes().first(10), mem.lkey(), m, 0, 1s), UserError); // no format yet
    p.tx->set_format(format_with_side_data(8), 2s); // 4 + 6 bytes do not fit 8
    EXPECT_THROW(p.tx->send(mem.bytes().first(10), mem.lkey(), m, 0, 1s), UserError);
    const auto odd = bytes({0xfc, 0x94});
    const SideData bad[] = {{SideDataKind::kCaptions, odd}};
    m.side_data = bad;
    EXPECT_THROW(p.tx->send(mem.bytes().first(10), mem.lkey(), m, 0, 1s), UserError); // not whole triplets
}

// The clock anchor arrives in order: frames before it have none, frames
// after it point at it; a second one replaces it.
TEST(ClockAnchorStream, FramesAfterItAreOnIt) {
    auto p = connect_pair(ring(4), SenderOptions{});
    RegisteredRegion mem = p.tx->register_memory(4096, 0);
    p.tx->send(mem.bytes().first(10), mem.lkey(), {}, 0, 1s);
    p.tx->set_clock(ClockAnchor{AnchorClock::kRealtime, 1'000'000'000, true}, 1s);
    p.tx->send(mem.bytes().first(10), mem.lkey(), {}, 1, 1s);
    p.tx->set_clock(ClockAnchor{AnchorClock::kTai, 2'000'000'000, false}, 1s);
    p.tx->send(mem.bytes().first(10), mem.lkey(), {}, 2, 1s);
    auto f = p.rx->next(1s);
    ASSERT_TRUE(f);
    EXPECT_EQ(f->clock, nullptr);
    p.rx->release(f->slot);
    f = p.rx->next(1s);
    ASSERT_TRUE(f && f->clock);
    EXPECT_EQ(f->clock->pts0_ns, 1'000'000'000);
    EXPECT_EQ(f->clock->clock, AnchorClock::kRealtime);
    EXPECT_TRUE(f->clock->synchronized);
    p.rx->release(f->slot);
    f = p.rx->next(1s);
    ASSERT_TRUE(f && f->clock);
    EXPECT_EQ(f->clock->pts0_ns, 2'000'000'000);
    EXPECT_EQ(f->clock->clock, AnchorClock::kTai);
}

} // namespace
} // namespace rdmastream::harness
