// SPDX-License-Identifier: LGPL-2.1-or-later
// Authentication with a pre-shared key, end to end over the in-memory
// fabric: the real handshake (handshake.hpp) on both ends, each on its own
// thread as two processes would run it, then the stream ends. The hellos,
// which rdma_cm carries in its private data, are handed over directly.
// Hand-written peers (RawPeer) play the hostile ends: one that reflects our
// proof, one that guesses, one that replays; what they received is checked
// for the ring's address and rkey.
#include "handshake_ends.hpp"

#include "rdmastream/error.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <vector>

namespace rdmastream::harness {
namespace {

using namespace std::chrono_literals;

// Both ends through the handshake, as connect/accept run it over rdma_cm.
std::unique_ptr<Ends> shake_hands(const RingConfig& ring, const SenderOptions& opts) {
    auto j = std::make_unique<Ends>();
    std::unique_ptr<Datapath> rx_path = j->fabric.end(0);
    std::unique_ptr<Datapath> tx_path = j->fabric.end(1);
    auto rxh = std::make_unique<Handshake>(*rx_path, wire::Role::kReceiver, ring.slots, ring.key);
    auto txh = std::make_unique<Handshake>(*tx_path, wire::Role::kSender, FrameSender::kMaxSlots, opts.key);
    run_ends(*j, std::move(rx_path), std::move(rxh), std::move(tx_path), std::move(txh), ring, opts);
    return j;
}

TEST(Auth, SameKeyStreams) {
    auto j = shake_hands(ring_with(key_of('a')), sender_with(key_of('a')));
    ASSERT_EQ(j->rx_error, "");
    ASSERT_EQ(j->tx_error, "");
    EXPECT_EQ(j->tx->ring().rkey, j->rx->ring_advert().rkey);
    EXPECT_EQ(j->tx->ring().slot_rkeys, j->rx->ring_advert().slot_rkeys); // memory windows: a key per slot
    EXPECT_EQ(j->tx->ring().addr, j->rx->ring_advert().addr);
    stream_frames(*j, 10);
}

TEST(Auth, NoKeyOnEitherEndStreams) {
    auto j = shake_hands(ring_with(nullptr), sender_with(nullptr));
    ASSERT_EQ(j->rx_error, "");
    ASSERT_EQ(j->tx_error, "");
    stream_frames(*j, 3);
}

TEST(Auth, WrongKeyIsRefusedOnBothEnds) {
    auto j = shake_hands(ring_with(key_of('a')), sender_with(key_of('b')));
    EXPECT_EQ(j->rx, nullptr);
    EXPECT_EQ(j->tx, nullptr);
    EXPECT_EQ(j->rx_error, "the sender 198.18.0.2:40000's key does not match ours (key-a): give both ends the same "
                           "key file");
    EXPECT_EQ(j->tx_error, "the receiver 198.18.0.1:18515's key does not match ours (key-b): give both ends the same "
                           "key file");
    EXPECT_EQ(j->fabric.sends_posted(0), 1u); // the receiver's proof, and no ring advert
}

TEST(Auth, SenderWithoutKeyIsRefusedOnBothEnds) {
    auto j = shake_hands(ring_with(key_of('a')), sender_with(nullptr));
    EXPECT_EQ(j->rx, nullptr);
    EXPECT_EQ(j->tx, nullptr);
    EXPECT_EQ(j->rx_error, "the sender 198.18.0.2:40000 has no key but this receiver requires one: give both ends the "
                           "same key file (--key-file)");
    EXPECT_EQ(j->tx_error, "the receiver 198.18.0.1:18515 has a key but this sender has none: give both ends the same "
                           "key file (--key-file)");
    EXPECT_EQ(j->fabric.sends_posted(0), 0u);
}

TEST(Auth, ReceiverWithoutKeyIsRefusedOnBothEnds) {
    auto j = shake_hands(ring_with(nullptr), sender_with(key_of('a')));
    EXPECT_EQ(j->rx, nullptr);
    EXPECT_EQ(j->tx, nullptr);
    EXPECT_NE(j->tx_error.find("the receiver 198.18.0.1:18515 has no key but this sender requires one"),
              std::string::npos)
        << j->tx_error;
    EXPECT_NE(j->rx_error.find("the sender 198.18.0.2:40000 has a key but this receiver has none"), std::string::npos)
        << j->rx_error;
    EXPECT_EQ(j->fabric.sends_posted(0), 0u);
}

// A sender with our key, against a receiver that sends our own proof back
// (as it came, and with its role byte changed): both refused.
TEST(Auth, AReflectedProofIsRefused) {
    for (const bool relabel : {false, true}) {
        MemoryFabric fabric;
        RawPeer rogue(fabric.end(0));
        std::unique_ptr<Datapath> tx_path = fabric.end(1);
        Handshake txh(*tx_path, wire::Role::kSender, FrameSender::kMaxSlots, key_of('a'));
        txh.take_peer_hello(wire::encode(wire::ReceiverHello{4, true, fresh_nonce()}), "198.18.0.1:18515");
        Running sender(txh);
        auto proof = rogue.next(2s);
        ASSERT_TRUE(proof.has_value());
        ASSERT_EQ(proof->kind, wire::Control::kAuth);
        if (relabel) proof->bytes[6] = std::byte{2}; // "from the receiver": the MAC still says sender
        rogue.send(wire::Control::kAuth, proof->bytes);
        const std::string error = sender.join();
        if (relabel) {
            EXPECT_EQ(error, "the receiver 198.18.0.1:18515's key does not match ours (key-a): give both ends the "
                             "same key file");
        } else {
            EXPECT_NE(error.find("a proof of ours reflected back"), std::string::npos) << error;
        }
    }
}

// A sender that guesses a proof, replays one another connection had, or
// skips it: the receiver refuses it, and all that reached the rogue is the
// receiver's own proof: no ring advert (the ring is not even registered).
TEST(Auth, TheRingAdvertNeverReachesAnUnprovenSender) {
    const auto key = key_of('a');
    const auto recorded_hello = wire::encode(wire::SenderHello{256, true, fresh_nonce()});
    for (const char* attack : {"guess", "replay", "no proof, a ring advert of its own"}) {
        SCOPED_TRACE(attack);
        MemoryFabric fabric;
        std::unique_ptr<Datapath> rx_path = fabric.end(0);
        RawPeer rogue(fabric.end(1));
        const RingConfig ring = ring_with(key);
        auto rxh = std::make_unique<Handshake>(*rx_path, wire::Role::kReceiver, ring.slots, key);
        rxh->take_peer_hello(recorded_hello, "198.18.0.66:6666");
        std::unique_ptr<FrameReceiver> rx;
        Running receiver(*rxh, [&] {
            rxh.reset();
            rx = std::make_unique<FrameReceiver>(std::move(rx_path), ring);
            rx->announce_ring();
        });
        auto theirs = rogue.next(2s); // the receiver's proof comes first, whatever we do
        ASSERT_TRUE(theirs.has_value());
        EXPECT_EQ(theirs->kind, wire::Control::kAuth);
        const std::string what = attack;
        if (what == "guess") {
            rogue.send(wire::Control::kAuth, wire::encode(wire::KeyProof{wire::Role::kSender, {}}));
        } else if (what == "replay") {
            // The proof a genuine sender sent with this hello to another
            // receiver (another nonce): right key, wrong connection.
            const auto old = wire::encode(wire::ReceiverHello{4, true, fresh_nonce()});
            rogue.send(wire::Control::kAuth, wire::encode(make_key_proof(*key, wire::Role::kSender, recorded_hello, old)));
        } else {
            rogue.send(wire::Control::kRing, wire::encode(wire::RingAdvert{4, 8192, 0x1000, 7, false}));
        }
        const std::string error = receiver.join();
        EXPECT_EQ(rx, nullptr);
        EXPECT_FALSE(error.empty());
        if (what != "no proof, a ring advert of its own") {
            EXPECT_NE(error.find("198.18.0.66:6666's key does not match ours"), std::string::npos) << error;
        }
        EXPECT_FALSE(rogue.next(200ms).has_value()); // nothing after the proof: no ring advert
        EXPECT_EQ(rogue.received_bytes(), wire::kKeyProofSize);
        rxh.reset();
    }
}

// A receiver whose ring goes out only after the proof: a genuine sender's
// handshake sees the same address and rkey the rogue never saw.
TEST(Auth, AProvenSenderGetsTheRing) {
    auto j = shake_hands(ring_with(key_of('z')), sender_with(key_of('z')));
    ASSERT_NE(j->tx, nullptr) << j->tx_error;
    EXPECT_EQ(j->fabric.sends_posted(0), 2u); // the receiver's proof, then its ring advert
}

} // namespace
} // namespace rdmastream::harness
