// SPDX-License-Identifier: LGPL-2.1-or-later
// The stream protocol end to end, FrameSender against FrameReceiver over the
// in-memory fabric: every state in milliseconds, natively. The same code
// runs over verbs on Soft-RoCE in tests/rdma/.
#include "stream_pair.hpp"

#include "rdmastream/error.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

namespace rdmastream::harness {
namespace {

using namespace std::chrono_literals;


// Frame i: its size and a byte pattern that names it.
std::size_t size_of(std::uint64_t i) { return 1 + (i * 977) % 4096; }
std::byte pattern(std::uint64_t i, std::size_t at) { return std::byte(static_cast<unsigned char>(i * 31 + at)); }

// The caller's frame memory: one buffer per frame in flight, reused when
// on_done says its frame is done.
struct Buffers {
    explicit Buffers(FrameSender& tx, std::size_t count)
        : region(tx.register_memory(count * 4096, 0)), done(count, true) {}
    std::span<const std::byte> fill(std::size_t b, std::uint64_t i) {
        auto bytes = region.bytes().subspan(b * 4096, size_of(i));
        for (std::size_t k = 0; k < bytes.size(); ++k) bytes[k] = pattern(i, k);
        done[b] = false;
        return bytes;
    }
    RegisteredRegion region;
    std::vector<bool> done;
};

// What a receiving thread saw.
struct Received {
    std::vector<std::uint64_t> sequences;
    bool intact = true;
    bool ended = false;
    std::string error;
};

// Takes frames until end of stream, checking each payload, and releases
// each after `hold` (how slow the consumer is).
std::thread receive_all(FrameReceiver& rx, Received& got, std::chrono::milliseconds hold = 0ms) {
    return std::thread([&rx, &got, hold] {
        try {
            while (auto f = rx.next(5s)) {
                const std::uint64_t i = f->header.sequence;
                got.sequences.push_back(i);
                bool ok = f->payload.size() == size_of(i);
                for (std::size_t k = 0; ok && k < f->payload.size(); ++k) ok = f->payload[k] == pattern(i, k);
                got.intact = got.intact && ok;
                if (hold.count() > 0) std::this_thread::sleep_for(hold);
                rx.release(f->slot);
            }
            got.ended = true;
        } catch (const std::exception& e) {
            got.error = e.what();
        }
    });
}

bool contiguous(const std::vector<std::uint64_t>& s, std::uint64_t n) {
    if (s.size() != n) return false;
    for (std::uint64_t i = 0; i < n; ++i) {
        if (s[i] != i) return false;
    }
    return true;
}

// Lossless, many laps of a small ring, in both poll modes: every frame
// arrives once, in order, intact, and its memory comes back exactly once.
void lossless_stream(PollMode mode) {
    std::vector<int> fates(mode == PollMode::kBusy ? 300 : 3000, 0); // busy: two spinning threads
    SenderOptions o;
    o.poll_mode = mode;
    Buffers* buffers = nullptr;
    o.on_done = [&](std::uint64_t cookie, FrameFate fate) {
        ++fates[cookie];
        EXPECT_EQ(fate, FrameFate::kDelivered);
        buffers->done[cookie % 16] = true;
    };
    auto p = connect_pair(ring(4, mode), o);
    Buffers b(*p.tx, 16);
    buffers = &b;
    Received got;
    std::thread t = receive_all(*p.rx, got);
    for (std::uint64_t i = 0; i < fates.size(); ++i) {
        const std::size_t slot = i % 16;
        while (!b.done[slot]) p.tx->progress();
        ASSERT_EQ(p.tx->send(b.fill(slot, i), b.region.lkey(), {}, i, 5s), i);
    }
    p.tx->finish(5s);
    t.join();
    EXPECT_EQ(got.error, "");
    EXPECT_TRUE(got.ended);
    EXPECT_TRUE(got.intact);
    EXPECT_TRUE(contiguous(got.sequences, fates.size()));
    for (std::size_t i = 0; i < fates.size(); ++i) ASSERT_EQ(fates[i], 1) << "frame " << i;
    EXPECT_EQ(p.tx->stats().drops, 0u);
}

TEST(Protocol, LosslessStreamEventMode) { lossless_stream(PollMode::kEvent); }
TEST(Protocol, LosslessStreamBusyMode) { lossless_stream(PollMode::kBusy); }

// Credits coalesce: a consumer that releases several frames between two
// looks at the CQ costs one credit message per quarter ring, not one per frame.
TEST(Protocol, CreditsCoalesce) {
    auto p = connect_pair(ring(8), SenderOptions{});
    Buffers b(*p.tx, 8);
    for (std::uint64_t i = 0; i < 8; ++i) p.tx->send(b.fill(i, i), b.region.lkey(), {}, i, 1s);
    std::vector<std::uint16_t> held;
    for (int i = 0; i < 8; ++i) held.push_back(p.rx->next(1s)->slot);
    const std::uint64_t before = p.fabric.sends_posted(0);
    for (const std::uint16_t s : held) p.rx->release(s);
    EXPECT_EQ(p.fabric.sends_posted(0) - before, 4u) << "8 releases, a quarter ring (2) per credit message";
    p.tx->progress();
    EXPECT_EQ(p.tx->credits_available(), 8u);
    // One release and a look at the CQ: its credit goes out on its own.
    p.tx->send(b.fill(0, 8), b.region.lkey(), {}, 8, 1s);
    auto f = p.rx->next(1s);
    p.rx->release(f->slot);
    EXPECT_EQ(p.tx->credits_available(), 7u); // not yet sent: the receiver has not looked
    std::thread look([&] { EXPECT_THROW(p.rx->wait_frame(50ms), TimeoutError); });
    look.join();
    p.tx->progress();
    EXPECT_EQ(p.tx->credits_available(), 8u);
}

// A receiver that holds every slot and releases nothing still hands back
// the frames' memory: the write that took the last credit is signalled.
TEST(Protocol, DeliveredFramesRetireWithoutReleases) {
    int delivered = 0;
    SenderOptions o;
    o.on_done = [&](std::uint64_t, FrameFate f) { delivered += f == FrameFate::kDelivered; };
    auto p = connect_pair(ring(4), o);
    Buffers b(*p.tx, 4);
    for (std::uint64_t i = 0; i < 4; ++i) p.tx->send(b.fill(i, i), b.region.lkey(), {}, i, 1s);
    p.tx->progress();
    EXPECT_EQ(delivered, 4);
    EXPECT_EQ(p.tx->credits_available(), 0u);
}

// A caller that keeps fewer frames out than half the ring (rdmasend
// --slots 2 to a receiver with 16 slots) and a receiver that holds what it
// got: no credit comes back, so only a signalled write retires the frames.
// With writes signalled every slots/2 the oldest frame waited for the
// keepalive (here 30 s, so the wait timed out).
TEST(Protocol, AShallowCallerWaitsForNoKeepalive) {
    SenderOptions o;
    o.keepalive = 30s;
    o.caller_depth = 2;
    auto p = connect_pair(ring(16), o);
    Buffers b(*p.tx, 2);
    std::vector<ReceivedFrame> held; // the receiver keeps every frame
    for (std::uint64_t i = 0; i < 6; ++i) {
        const std::size_t entry = i % 2;
        if (i >= 2) {
            const auto started = std::chrono::steady_clock::now();
            ASSERT_NO_THROW(p.tx->wait_done(i - 2, 2s)) << "frame " << i - 2;
            EXPECT_LT(std::chrono::steady_clock::now() - started, 1s) << "frame " << i - 2;
        }
        p.tx->send(b.fill(entry, i), b.region.lkey(), {}, entry, 1s);
        auto f = p.rx->next(1s);
        ASSERT_TRUE(f.has_value());
        held.push_back(*f);
    }
}

// Live: with every slot held, the sender never waits; it keeps the newest
// frame pending and drops the one before, and posts the pending one as soon
// as a credit comes back.
TEST(Protocol, LivePolicyDropsTheOlderPendingFrame) {
    int dropped = 0;
    SenderOptions o;
    o.policy = Policy::kLive;
    o.on_done = [&](std::uint64_t, FrameFate f) { dropped += f == FrameFate::kDropped; };
    auto p = connect_pair(ring(4), o);
    Buffers b(*p.tx, 20);
    for (std::uint64_t i = 0; i < 20; ++i) ASSERT_EQ(p.tx->send(b.fill(i, i), b.region.lkey(), {}, i, 0ms), i);
    EXPECT_EQ(dropped, 15); // 4 in slots, 1 pending, the rest dropped
    EXPECT_EQ(p.tx->stats().drops, 15u);
    std::vector<std::uint64_t> seen;
    for (int i = 0; i < 4; ++i) {
        auto f = p.rx->next(1s);
        seen.push_back(f->header.sequence);
        p.rx->release(f->slot);
    }
    std::thread look([&] { EXPECT_THROW(p.rx->wait_frame(20ms), TimeoutError); }); // the credits go out
    look.join();
    p.tx->progress(); // the pending frame goes
    seen.push_back(p.rx->next(1s)->header.sequence);
    EXPECT_EQ(seen, (std::vector<std::uint64_t>{0, 1, 2, 3, 19}));
}

// A write the device refuses to post (a full send queue: ENOMEM) takes
// nothing: the frame stays the caller's (no number, no on_done) and its
// slot's credit stays the sender's, so the frame offered again goes out in
// that slot. (A lost credit left a ring of one slot with none: the second
// offer timed out.)
TEST(Protocol, ARefusedPostKeepsItsCredit) {
    std::vector<std::uint64_t> done;
    SenderOptions o;
    o.on_done = [&](std::uint64_t cookie, FrameFate) { done.push_back(cookie); };
    auto p = connect_pair(ring(1), o);
    Buffers b(*p.tx, 1);
    p.fabric.refuse_next_send(1, ENOMEM);
    EXPECT_THROW(p.tx->send(b.fill(0, 0), b.region.lkey(), {}, 0, 1s), SystemError);
    EXPECT_EQ(p.tx->credits_available(), 1u);
    EXPECT_EQ(p.tx->state(), SenderState::kStreaming);
    EXPECT_TRUE(done.empty());
    ASSERT_EQ(p.tx->send(b.fill(0, 0), b.region.lkey(), {}, 0, 1s), 0u); // the same number again
    auto f = p.rx->next(1s);
    ASSERT_TRUE(f);
    EXPECT_EQ(f->header.sequence, 0u);
    EXPECT_EQ(f->payload.size(), size_of(0));
    p.rx->release(f->slot);
}

// Live: a pending frame whose post is refused stays pending (it was taken:
// its on_done is owed) and goes out at the next progress().
TEST(Protocol, ARefusedPostKeepsThePendingFrame) {
    std::vector<std::uint64_t> done;
    SenderOptions o;
    o.policy = Policy::kLive;
    o.on_done = [&](std::uint64_t cookie, FrameFate) { done.push_back(cookie); };
    auto p = connect_pair(ring(1), o);
    Buffers b(*p.tx, 2);
    ASSERT_EQ(p.tx->send(b.fill(0, 0), b.region.lkey(), {}, 0, 0ms), 0u); // in the slot
    ASSERT_EQ(p.tx->send(b.fill(1, 1), b.region.lkey(), {}, 1, 0ms), 1u); // pending
    auto f = p.rx->next(1s);
    ASSERT_TRUE(f);
    p.rx->release(f->slot);
    std::thread look([&] { EXPECT_THROW(p.rx->wait_frame(20ms), TimeoutError); }); // the credit goes out
    look.join();
    p.fabric.refuse_next_send(1, ENOMEM);
    EXPECT_THROW(p.tx->progress(), SystemError);
    EXPECT_EQ(p.tx->credits_available(), 1u);
    p.tx->progress(); // posted now
    f = p.rx->next(1s);
    ASSERT_TRUE(f);
    EXPECT_EQ(f->header.sequence, 1u);
    EXPECT_EQ(f->payload.size(), size_of(1));
    p.rx->release(f->slot);
    p.tx.reset(); // stop(): every frame taken comes back, once
    EXPECT_EQ(done, (std::vector<std::uint64_t>{0, 1}));
}

// A format whose frames outgrow the slots: the receiver grows its ring on
// the live connection and the larger frames arrive intact.
TEST(Protocol, RingGrowsForLargerFrames) {
    auto p = connect_pair(ring(2), SenderOptions{});
    RegisteredRegion big = p.tx->register_memory(3 * 4096, 0);
    std::thread rx([&] {
        auto f = p.rx->next(2s);
        ASSERT_TRUE(f);
        EXPECT_EQ(f->payload.size(), 100u);
        p.rx->release(f->slot);
        f = p.rx->next(2s);
        ASSERT_TRUE(f);
        EXPECT_TRUE(f->format_changed);
        EXPECT_EQ(f->payload.size(), 3 * 4096u);
        EXPECT_EQ(f->payload[3 * 4096 - 1], std::byte{0x5a});
        EXPECT_GE(p.rx->ring().slot_size, 3 * 4096 + wire::kSlotHeaderSize);
        p.rx->release(f->slot);
        EXPECT_FALSE(p.rx->next(2s)); // end of stream
    });
    big.bytes()[3 * 4096 - 1] = std::byte{0x5a};
    p.tx->send(big.bytes().first(100), big.lkey(), {}, 0, 1s);
    wire::StreamFormat fmt;
    fmt.id = 1;
    fmt.max_frame_size = 3 * 4096;
    fmt.caps = "application/x-test";
    p.tx->set_format(fmt, 2s);
    EXPECT_GE(p.tx->max_payload(), 3 * 4096u);
    p.tx->send(big.bytes(), big.lkey(), {}, 1, 1s);
    p.tx->finish(2s);
    rx.join();
}

// Keepalives: an idle sender that keeps calling progress() is alive; one
// that stops is reported after the receiver's idle timeout, by name.
TEST(Protocol, KeepalivesKeepAnIdleStreamAlive) {
    SenderOptions o;
    o.keepalive = 10ms;
    auto p = connect_pair(ring(2), o);
    Buffers b(*p.tx, 1);
    std::atomic<bool> done{false};
    std::thread rx([&] {
        // No frame for 750 ms, three idle timeouts; keepalives every 10 ms
        // (the idle timeout leaves a loaded machine room to deschedule the sender).
        auto f = p.rx->next(250ms);
        EXPECT_TRUE(f);
        done = true;
    });
    for (auto until = std::chrono::steady_clock::now() + 750ms; std::chrono::steady_clock::now() < until;) {
        p.tx->progress();
        std::this_thread::sleep_for(2ms);
    }
    p.tx->send(b.fill(0, 0), b.region.lkey(), {}, 0, 1s);
    rx.join();
    EXPECT_TRUE(done);
    EXPECT_GE(p.fabric.sends_posted(1), 10u); // the keepalives
}

TEST(Protocol, ASilentSenderIsReportedAfterTheIdleTimeout) {
    auto p = connect_pair(ring(2), SenderOptions{});
    try {
        p.rx->next(50ms);
        FAIL() << "no timeout";
    } catch (const TimeoutError& e) {
        EXPECT_NE(std::string(e.what()).find("no frame and no keepalive for 50 ms"), std::string::npos) << e.what();
    }
}

// End of stream: the receiver sees it once every frame was delivered, and
// from then on only the end.
TEST(Protocol, EndOfStream) {
    auto p = connect_pair(ring(2), SenderOptions{});
    Received got;
    std::thread t = receive_all(*p.rx, got);
    Buffers b(*p.tx, 1);
    p.tx->send(b.fill(0, 0), b.region.lkey(), {}, 0, 1s);
    p.tx->finish(1s);
    t.join();
    EXPECT_TRUE(got.ended);
    EXPECT_EQ(got.sequences, std::vector<std::uint64_t>{0});
    EXPECT_EQ(p.rx->wait_frame(1s).kind, FrameReceiver::Arrival::kEnd);
}

// A receiver that stops releasing: a lossless sender gives up after its
// timeout with a message that says so; one that goes away is named at once.
TEST(Protocol, AStuckReceiverTimesTheSenderOut) {
    auto p = connect_pair(ring(2), SenderOptions{});
    Buffers b(*p.tx, 3);
    p.tx->send(b.fill(0, 0), b.region.lkey(), {}, 0, 1s);
    p.tx->send(b.fill(1, 1), b.region.lkey(), {}, 1, 1s);
    try {
        p.tx->send(b.fill(2, 2), b.region.lkey(), {}, 2, 50ms);
        FAIL() << "no timeout";
    } catch (const TimeoutError& e) {
        EXPECT_NE(std::string(e.what()).find("no credit for 50 ms after 2 frames"), std::string::npos) << e.what();
    }
}

TEST(Protocol, AReceiverThatLeavesIsNamed) {
    auto p = connect_pair(ring(2), SenderOptions{});
    Buffers b(*p.tx, 3);
    p.tx->send(b.fill(0, 0), b.region.lkey(), {}, 0, 1s);
    p.tx->send(b.fill(1, 1), b.region.lkey(), {}, 1, 1s);
    p.rx.reset(); // hangs up
    try {
        p.tx->send(b.fill(2, 2), b.region.lkey(), {}, 2, 5s);
        FAIL() << "the sender did not notice";
    } catch (const ConnectionError& e) {
        EXPECT_NE(std::string(e.what()).find("receiver went away after 2 frames"), std::string::npos) << e.what();
    }
}

// A receiver that had the frames it wanted says so as it leaves: the
// sender's stream ends as such (PeerLeft, which callers treat as success),
// not as a receiver that went away, whether the sender was sending or
// ending the stream.
TEST(Protocol, AReceiverThatLeavesOnPurposeEndsTheStream) {
    auto p = connect_pair(ring(2), SenderOptions{});
    Buffers b(*p.tx, 3);
    p.tx->send(b.fill(0, 0), b.region.lkey(), {}, 0, 1s);
    ASSERT_TRUE(p.rx->next(1s));
    p.rx->leave();
    try {
        p.tx->send(b.fill(1, 1), b.region.lkey(), {}, 1, 5s);
        p.tx->send(b.fill(2, 2), b.region.lkey(), {}, 2, 5s);
        p.tx->finish(5s);
        FAIL() << "the sender did not notice";
    } catch (const PeerLeft& e) {
        EXPECT_NE(std::string(e.what()).find("the receiver harness end 0 left after"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("it has every frame it wants"), std::string::npos) << e.what();
    }
}

TEST(Protocol, AReceiverThatLeavesDuringTheEndIsNoFailure) {
    auto p = connect_pair(ring(2), SenderOptions{});
    Buffers b(*p.tx, 1);
    p.tx->send(b.fill(0, 0), b.region.lkey(), {}, 0, 1s);
    ASSERT_TRUE(p.rx->next(1s));
    p.rx->leave();
    EXPECT_THROW(p.tx->finish(5s), PeerLeft);
}

// The waker interrupts a lossless send that waits for a credit; the frame
// was not taken, so offering it again keeps the numbers contiguous and
// counts one credit wait per frame, however many wakes came (the rdmasink
// defect: a retried send burnt a frame number per try).
TEST(Protocol, WokenSendsTakeNoNumber) {
    SenderOptions o;
    o.waker = std::make_shared<Waker>();
    auto p = connect_pair(ring(2), o);
    Buffers b(*p.tx, 2);
    o.on_done = nullptr;
    Received got;
    constexpr std::uint64_t kFrames = 60;
    std::atomic<int> interrupted{0};
    std::atomic<bool> stop{false};
    // The consumer holds each frame until a wake has interrupted one of the
    // sender's waits since (at most 2 s; not once the last frame is sent): with a full ring of 2 every later
    // send must wait, so wakes interrupt waits however the threads are
    // scheduled (a consumer that only slept let a descheduled sender find a
    // credit every time on a loaded machine: nothing was interrupted).
    std::thread rx([&] {
        try {
            while (auto f = p.rx->next(5s)) {
                got.sequences.push_back(f->header.sequence);
                const int seen = interrupted.load();
                const auto until = std::chrono::steady_clock::now() + 2s;
                while (!stop && interrupted.load() == seen && std::chrono::steady_clock::now() < until) {
                    std::this_thread::sleep_for(100us);
                }
                p.rx->release(f->slot);
            }
            got.ended = true;
        } catch (const std::exception& e) {
            got.error = e.what();
        }
    });
    std::thread waker([&] {
        while (!stop) {
            o.waker->wake();
            std::this_thread::sleep_for(200us);
        }
    });
    RegisteredRegion frames = p.tx->register_memory(kFrames * 4096, 0);
    for (std::uint64_t i = 0; i < kFrames; ++i) {
        auto bytes = frames.bytes().subspan(i * 4096, size_of(i));
        for (std::size_t k = 0; k < bytes.size(); ++k) bytes[k] = pattern(i, k);
        for (;;) {
            const auto n = p.tx->send(bytes, frames.lkey(), {}, i, 5s);
            if (n) {
                ASSERT_EQ(*n, i);
                break;
            }
            ++interrupted;
        }
    }
    stop = true;
    waker.join();
    p.tx->finish(5s);
    rx.join();
    EXPECT_GT(interrupted.load(), 0) << "the waker never interrupted a wait: the test proves nothing";
    EXPECT_EQ(got.error, "");
    EXPECT_TRUE(contiguous(got.sequences, kFrames));
    EXPECT_LE(p.tx->stats().credit_waits, kFrames);
}

// The waker ends a receiver's wait at once, long before its idle timeout.
TEST(Protocol, WokenReceiverWaitReturns) {
    RingConfig r = ring(2);
    r.waker = std::make_shared<Waker>();
    auto p = connect_pair(r, SenderOptions{});
    std::thread t([&] {
        std::this_thread::sleep_for(20ms);
        r.waker->wake();
    });
    EXPECT_EQ(p.rx->wait_frame(30s).kind, FrameReceiver::Arrival::kWoken);
    t.join();
}

// A hostile receiver: credits for slots the sender holds are refused by name.
TEST(Protocol, ACreditForAHeldSlotIsRefused) {
    MemoryFabric fabric;
    auto rogue = fabric.end(0);
    RegisteredRegion ringmem = rogue->register_memory(2 * kSlot, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    RegisteredRegion out = rogue->register_memory(64, 0);
    FrameSender tx(fabric.end(1), wire::RingAdvert{2, kSlot, ringmem.addr(), ringmem.rkey(), false}, SenderOptions{});
    const std::size_t n = wire::encode_credits(std::vector<wire::Credit>{{{0, 0}, ringmem.rkey()}}, out.bytes());
    ibv_sge sge{out.addr(), static_cast<std::uint32_t>(n), out.lkey()};
    ibv_send_wr wr{};
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND_WITH_IMM;
    wr.imm_data = htonl(wire::encode(wire::Control::kCredits));
    rogue->post_send(wr, "rogue credits");
    try {
        tx.progress();
        FAIL() << "an unasked credit was taken";
    } catch (const ProtocolError& e) {
        EXPECT_NE(std::string(e.what()).find("credit for slot 0, which the sender already holds"), std::string::npos)
            << e.what();
    }
}

} // namespace
} // namespace rdmastream::harness
