// SPDX-License-Identifier: LGPL-2.1-or-later
// A receiver that does not run for a while (its thread descheduled, its
// process stopped) stalls the stream; it does not end it. Its NIC answers
// a write or send it has no receive for with receiver-not-ready, which the
// sender's NIC retries without end (RcConnection's rnr_retry 7), so the
// sender waits, and only its own limit on an unacknowledged control message
// (SenderOptions::ack_limit) gives up. The fabric must do the same: when it
// failed such a send at once, a sender's keepalives into a receiver that
// callgrind's scheduler kept off the CPU for 2 s killed the stream.
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

// A 2-slot ring posts 3 receives. The sender fills both slots, then waits
// for a credit and sends a keepalive every 10 ms (one may go between the
// frames too): its fourth message finds no receive. The receiver runs only
// once that message is posted, and the stream goes on to its end.
void receiver_comes_back(PollMode mode) {
    SenderOptions o;
    o.keepalive = 10ms;
    o.poll_mode = mode;
    auto p = connect_pair(ring(2, mode), o);
    RegisteredRegion frame = p.tx->register_memory(4096, 0);
    std::string tx_error;
    std::thread tx([&] {
        try {
            for (std::uint64_t i = 0; i < 3; ++i) {
                p.tx->send(frame.bytes(), frame.lkey(), {}, i, 5s).value(); // the third waits for a credit
            }
            p.tx->finish(5s);
        } catch (const std::exception& e) {
            tx_error = e.what();
            p.tx.reset(); // hangs up: the receiver's wait ends too
        }
    });
    const auto posted = [&p] { return p.fabric.writes_posted(1) + p.fabric.sends_posted(1); };
    const auto give_up = std::chrono::steady_clock::now() + 5s;
    while (posted() < 4 && std::chrono::steady_clock::now() < give_up) {
        std::this_thread::yield();
    }
    EXPECT_GE(posted(), 4u) << "the sender sent no message beyond the receiver's receives";
    std::uint64_t received = 0;
    std::string rx_error;
    try {
        while (auto f = p.rx->next(2s)) {
            p.rx->release(f->slot);
            ++received;
        }
    } catch (const std::exception& e) {
        rx_error = e.what();
    }
    tx.join();
    EXPECT_EQ(tx_error, "");
    EXPECT_EQ(rx_error, "");
    EXPECT_EQ(received, 3u);
}

TEST(Stall, AReceiverThatDoesNotRunStallsTheStreamWithoutEndingIt) { receiver_comes_back(PollMode::kEvent); }

TEST(Stall, AReceiverThatDoesNotRunStallsABusyStreamWithoutEndingIt) { receiver_comes_back(PollMode::kBusy); }

// A receiver that never comes back is named by the sender's limit on an
// unacknowledged control message, as over verbs: the keepalive that finds
// no receive waits, it does not fail.
TEST(Stall, AReceiverThatNeverRunsAgainIsNamedByTheAckLimit) {
    SenderOptions o;
    o.keepalive = 10ms;
    o.ack_limit = 200ms;
    auto p = connect_pair(ring(2), o);
    RegisteredRegion frame = p.tx->register_memory(4096, 0);
    try {
        for (std::uint64_t i = 0; i < 3; ++i) {
            p.tx->send(frame.bytes(), frame.lkey(), {}, i, 5s).value();
        }
        FAIL() << "the third frame found a credit, though nobody drives the receiver";
    } catch (const ConnectionError& e) {
        EXPECT_THAT(std::string(e.what()), HasSubstr("has not acknowledged a control message for 200 ms"));
    }
}

} // namespace
} // namespace rdmastream::harness
