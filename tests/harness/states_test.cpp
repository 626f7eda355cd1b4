// SPDX-License-Identifier: LGPL-2.1-or-later
// Every transition of each stream end's state machine (stream_states.hpp),
// driven through the in-memory fabric, and the table itself: what a caller
// may do in each state, and what it is told when it may not.
#include "stream_pair.hpp"

#include "rdmastream/error.hpp"
#include "rdmastream/stream_states.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <ostream>
#include <string>
#include <thread>

namespace rdmastream {
// gtest prints states by name.
inline void PrintTo(SenderState s, std::ostream* os) { *os << name(s); }
inline void PrintTo(ReceiverState s, std::ostream* os) { *os << name(s); }
} // namespace rdmastream

namespace rdmastream::harness {
namespace {

using namespace std::chrono_literals;
using S = SenderState;
using R = ReceiverState;


wire::StreamFormat format(std::uint16_t id, std::uint32_t max_frame) {
    wire::StreamFormat f;
    f.id = id;
    f.max_frame_size = max_frame;
    f.caps = "application/x-test";
    return f;
}

bool contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

TEST(States, TheTableAllowsOnlyItsTransitions) {
    // Forward through a stream, and every live state may fail, be left, stop.
    EXPECT_TRUE(allowed(S::kStreaming, S::kFormatPosted));
    EXPECT_TRUE(allowed(S::kFormatPosted, S::kStreaming));
    EXPECT_TRUE(allowed(S::kStreaming, S::kEnding));
    EXPECT_TRUE(allowed(S::kEnding, S::kEnded));
    EXPECT_TRUE(allowed(S::kEnding, S::kLeft));
    for (S s : {S::kStreaming, S::kFormatPosted, S::kEnding}) {
        EXPECT_TRUE(allowed(s, S::kFailed)) << name(s);
        EXPECT_TRUE(allowed(s, S::kLeft)) << name(s);
    }
    // Terminal states lead nowhere but to stop(), and stop() is the last.
    for (S s : {S::kEnded, S::kLeft, S::kFailed}) {
        EXPECT_TRUE(allowed(s, S::kStopped)) << name(s);
        for (S to : {S::kStreaming, S::kFormatPosted, S::kEnding}) EXPECT_FALSE(allowed(s, to)) << name(s);
    }
    EXPECT_FALSE(allowed(S::kEnded, S::kFailed));
    EXPECT_FALSE(allowed(S::kStopped, S::kStreaming));
    EXPECT_FALSE(allowed(S::kFormatPosted, S::kEnding)); // finish() waits out a format first
    EXPECT_FALSE(allowed(S::kStreaming, S::kEnded));     // no end without its message

    EXPECT_TRUE(allowed(R::kStreaming, R::kEndArrived));
    EXPECT_TRUE(allowed(R::kEndArrived, R::kEnded));
    EXPECT_FALSE(allowed(R::kStreaming, R::kEnded));
    EXPECT_FALSE(allowed(R::kLeft, R::kStreaming));
    EXPECT_FALSE(allowed(R::kFailed, R::kLeft));

    S s = S::kEnded;
    try {
        step(s, S::kStreaming);
        FAIL() << "stepped";
    } catch (const std::logic_error& e) {
        EXPECT_TRUE(contains(e.what(), "sender: no transition from \"ended\" to \"streaming\"")) << e.what();
    }
    EXPECT_EQ(s, S::kEnded);
}

// kStreaming -> kFormatPosted -> kStreaming -> kEnding -> kEnded at the
// sender; kStreaming -> kEndArrived -> kEnded at the receiver.
TEST(States, AStreamWithAFormatAndAnEnd) {
    auto p = connect_pair(ring(2), SenderOptions{});
    RegisteredRegion mem = p.tx->register_memory(4096, 0);
    EXPECT_EQ(p.tx->state(), S::kStreaming);
    EXPECT_EQ(p.rx->state(), R::kStreaming);

    p.tx->begin_format(format(1, 4096));
    EXPECT_EQ(p.tx->state(), S::kFormatPosted);
    // Settles once the receiver's NIC took it (it fits the slots: no new ring).
    for (auto until = std::chrono::steady_clock::now() + 2s; !p.tx->format_settled();) {
        ASSERT_LT(std::chrono::steady_clock::now(), until) << "the format never settled";
    }
    EXPECT_EQ(p.tx->state(), S::kStreaming);
    p.tx->send(mem.bytes().first(10), mem.lkey(), {}, 0, 1s);
    auto f = p.rx->next(1s);
    ASSERT_TRUE(f);
    EXPECT_TRUE(f->format_changed);
    p.rx->release(f->slot);
    EXPECT_EQ(p.rx->state(), R::kStreaming);

    std::thread rx([&] { EXPECT_FALSE(p.rx->next(2s)); });
    p.tx->finish(2s);
    rx.join();
    EXPECT_EQ(p.tx->state(), S::kEnded);
    EXPECT_EQ(p.rx->state(), R::kEnded);
    p.tx->progress(); // nothing left to move: no error
    EXPECT_THROW(p.tx->send(mem.bytes().first(10), mem.lkey(), {}, 1, 1s), std::logic_error);
    p.tx->stop();
    EXPECT_EQ(p.tx->state(), S::kStopped);
}

// A format that outgrows the slots: kFormatPosted lasts until the grown
// ring is adopted, then kStreaming.
TEST(States, AGrowingFormatStaysPostedUntilTheNewRing) {
    auto p = connect_pair(ring(2), SenderOptions{});
    std::thread rx([&] { EXPECT_FALSE(p.rx->next(2s)); });
    p.tx->set_format(format(1, 3 * 4096), 2s); // waits through kFormatPosted
    EXPECT_EQ(p.tx->state(), S::kStreaming);
    EXPECT_GE(p.tx->max_payload(), 3 * 4096u);
    p.tx->finish(2s);
    rx.join();
    EXPECT_EQ(p.tx->state(), S::kEnded);
}

// kLeft at both ends; afterwards the sender keeps saying so, and finish()
// has nothing to do.
TEST(States, AReceiverThatLeavesLeavesBothEndsInKLeft) {
    auto p = connect_pair(ring(2), SenderOptions{});
    RegisteredRegion mem = p.tx->register_memory(4096, 0);
    p.tx->send(mem.bytes().first(10), mem.lkey(), {}, 0, 1s);
    ASSERT_TRUE(p.rx->next(1s));
    p.rx->leave();
    EXPECT_EQ(p.rx->state(), R::kLeft);
    EXPECT_THROW(p.rx->wait_frame(1s), std::logic_error);
    EXPECT_THROW(
        for (int i = 1; i < 10; ++i) p.tx->send(mem.bytes().first(10), mem.lkey(), {}, i, 2s), PeerLeft);
    EXPECT_EQ(p.tx->state(), S::kLeft);
    EXPECT_THROW(p.tx->progress(), PeerLeft); // said again, not a new failure
    p.tx->finish(1s);                         // the receiver ended the stream: nothing to do
    EXPECT_EQ(p.tx->state(), S::kLeft);
}

// kFailed at the receiver when the sender vanishes; a second call is told
// the stream failed already, not sent into a dead connection.
TEST(States, ASenderThatVanishesFailsTheReceiver) {
    auto p = connect_pair(ring(2), SenderOptions{});
    RegisteredRegion mem = p.tx->register_memory(4096, 0);
    p.tx->send(mem.bytes().first(10), mem.lkey(), {}, 0, 1s);
    p.tx.reset(); // no end of stream
    auto f = p.rx->next(1s);
    ASSERT_TRUE(f);
    p.rx->release(f->slot);
    EXPECT_THROW(p.rx->next(2s), ConnectionError);
    EXPECT_EQ(p.rx->state(), R::kFailed);
    try {
        p.rx->next(1s);
        FAIL() << "a failed stream gave a frame";
    } catch (const ConnectionError& e) {
        EXPECT_TRUE(contains(e.what(), "after the stream from harness end 1 failed")) << e.what();
    }
    p.rx->leave(); // nobody to tell: no error
}

// kFailed at the sender when the receiver vanishes; later calls say so.
TEST(States, AReceiverThatVanishesFailsTheSender) {
    auto p = connect_pair(ring(2), SenderOptions{});
    RegisteredRegion mem = p.tx->register_memory(4096, 0);
    p.rx.reset();
    EXPECT_THROW(
        for (int i = 0; i < 10; ++i) p.tx->send(mem.bytes().first(10), mem.lkey(), {}, i, 2s), ConnectionError);
    EXPECT_EQ(p.tx->state(), S::kFailed);
    try {
        p.tx->finish(1s);
        FAIL() << "finished a failed stream";
    } catch (const ConnectionError& e) {
        EXPECT_TRUE(contains(e.what(), "finish() after the stream to harness end 0 failed")) << e.what();
    }
}

} // namespace
} // namespace rdmastream::harness
