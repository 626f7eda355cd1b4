// SPDX-License-Identifier: LGPL-2.1-or-later
// The receiver decides what it pins (RingConfig::max_frame_bytes,
// max_ring_bytes): a format asking for more is refused by name, and the
// sender learns the receiver refused it. A large growth it allows does not
// kill the stream while the receiver pins the new ring.
#include "stream_pair.hpp"

#include "rdmastream/error.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

namespace rdmastream::harness {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;


wire::StreamFormat format_of(std::uint32_t max_frame_size) {
    wire::StreamFormat f;
    f.id = 1;
    f.max_frame_size = max_frame_size;
    f.caps = "application/x-test";
    return f;
}

// The receiver takes the format on its thread and fails as rdmarecv would:
// the error, then its end goes (a hang-up the sender sees).
struct Refusal {
    std::string receiver;
    std::string sender;
};
Refusal refuse(StreamPair& p, const wire::StreamFormat& f) {
    Refusal r;
    std::thread rx([&] {
        try {
            p.rx->next(2s);
            r.receiver = "(no refusal)";
        } catch (const UserError& e) {
            r.receiver = e.what();
        }
        p.rx.reset();
    });
    try {
        p.tx->set_format(f, 2s);
        r.sender = "(no refusal)";
    } catch (const std::runtime_error& e) {
        r.sender = e.what();
    }
    rx.join();
    return r;
}

TEST(Limits, AFrameAboveTheLimitIsRefusedNamingTheLimit) {
    RingConfig r = ring(2);
    r.max_frame_bytes = 8192;
    auto p = connect_pair(r, SenderOptions{});
    const Refusal got = refuse(p, format_of(3 * 4096));
    EXPECT_THAT(got.receiver, HasSubstr("frames of up to 12288 bytes"));
    EXPECT_THAT(got.receiver, HasSubstr("above this receiver's limit of 8192 bytes per frame"));
    EXPECT_THAT(got.receiver, HasSubstr("rdmarecv --max-frame-bytes, rdmasrc max-frame-bytes"));
    EXPECT_THAT(got.sender, HasSubstr("on stream format 1 (frames of up to 12288 bytes): it refused the format"));
    EXPECT_EQ(p.rx, nullptr);
}

// Frames within the frame limit, but slots x their size past the ring's.
TEST(Limits, AGrowthAboveTheRingLimitIsRefusedNamingTheLimit) {
    RingConfig r = ring(2);
    r.max_ring_bytes = 16384;
    auto p = connect_pair(r, SenderOptions{});
    const Refusal got = refuse(p, format_of(3 * 4096));
    EXPECT_THAT(got.receiver, HasSubstr("its 2 slots of 16384 bytes would bring the ring, every flow's slots together, to 32768 bytes"));
    EXPECT_THAT(got.receiver, HasSubstr("ring limit of 16384 bytes"));
    EXPECT_THAT(got.receiver, HasSubstr("rdmarecv --max-ring-bytes, rdmasrc max-ring-bytes"));
    EXPECT_THAT(got.sender, HasSubstr("it refused the format"));
}

// At the limit exactly: allowed, the ring grows, frames flow.
TEST(Limits, AGrowthAtTheLimitIsAllowed) {
    RingConfig r = ring(2);
    r.max_frame_bytes = 3 * 4096;
    r.max_ring_bytes = 2 * 16384;
    auto p = connect_pair(r, SenderOptions{});
    RegisteredRegion big = p.tx->register_memory(3 * 4096, 0);
    std::thread rx([&] {
        auto f = p.rx->next(2s);
        ASSERT_TRUE(f);
        EXPECT_EQ(f->payload.size(), 3 * 4096u);
        p.rx->release(f->slot);
        EXPECT_FALSE(p.rx->next(2s));
    });
    p.tx->set_format(format_of(3 * 4096), 2s);
    p.tx->send(big.bytes(), big.lkey(), {}, 0, 1s);
    p.tx->finish(2s);
    rx.join();
    EXPECT_EQ(p.rx->ring().slot_size, 16384u);
}

// The receiver pins the grown ring for 300 ms and serves nothing meanwhile
// (as rdmarecv did for 5 s with 2 GiB). A sender that kept sending
// keepalives every 10 ms would use up the 3 receives a 2-slot ring posts
// and die of "RNR retry counter exceeded"; the stream must live on.
TEST(Limits, PinningALargeRingDoesNotStarveTheStream) {
    SenderOptions o;
    o.keepalive = 10ms;
    o.ack_limit = 100ms;
    auto p = connect_pair(ring(2), o);
    p.fabric.slow_registration(2 * 16384, 300ms);
    RegisteredRegion big = p.tx->register_memory(3 * 4096, 0);
    std::string rx_error;
    std::thread rx([&] {
        try {
            auto f = p.rx->next(100ms); // shorter than the registration: its time is not the sender's silence
            if (!f || f->payload.size() != 3 * 4096u) throw std::runtime_error("not the grown frame");
            p.rx->release(f->slot);
            if (p.rx->next(1s)) throw std::runtime_error("a frame after the last");
        } catch (const std::exception& e) {
            rx_error = e.what();
        }
    });
    std::string tx_error;
    const auto before = std::chrono::steady_clock::now();
    try {
        p.tx->set_format(format_of(3 * 4096), 2s);
        EXPECT_GE(std::chrono::steady_clock::now() - before, 300ms); // the registration was really slow
        p.tx->send(big.bytes(), big.lkey(), {}, 0, 1s);
        p.tx->finish(2s);
    } catch (const std::exception& e) {
        tx_error = e.what();
        p.tx.reset(); // hangs up: the receiver's wait ends too
    }
    rx.join();
    EXPECT_EQ(tx_error, "");
    EXPECT_EQ(rx_error, "");
}

// A sender waiting for a grown ring that never comes is told so by its
// timeout, not by a keepalive's failure.
TEST(Limits, AGrowthThatNeverCompletesTimesOutByName) {
    SenderOptions o;
    o.keepalive = 10ms;
    auto p = connect_pair(ring(2), o);
    try {
        p.tx->set_format(format_of(3 * 4096), 100ms); // nobody drives the receiver
        FAIL() << "no timeout";
    } catch (const TimeoutError& e) {
        EXPECT_THAT(std::string(e.what()), HasSubstr("did not send its grown ring within 100 ms of stream format 1"));
    }
}

} // namespace
} // namespace rdmastream::harness
