// SPDX-License-Identifier: LGPL-2.1-or-later
// Two paths, at the handshake (docs/design/two-paths.md, decision 1): a
// connection that joins a running stream as its second path, over the
// in-memory fabric. A stream is founded on one fabric (path A) by the real
// handshake, each end keeping its session secret; the join runs on another
// (path B): the dialler's hello carries the stream's token, the listener
// screens it (Handshake::screen_join) before it makes anything, and each
// end sends its join proof in place of the key proof. Hand-written peers
// (RawPeer) play the hostile ends: a proof under another stream's secret,
// another key's, one recorded from another connection, our own reflected;
// what they received is checked for the ring advert.
#include "handshake_ends.hpp"

#include "rdmastream/error.hpp"
#include "wire/peer_auth.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

namespace rdmastream::harness {
namespace {

using namespace std::chrono_literals;
using wire::Role;

// Path B's addresses (path A's are run_ends' defaults, 198.18.0.x).
const std::string kReceiverB = "198.18.1.1:18515", kSenderB = "198.18.1.2:40001";
const std::string kReceiverA = "198.18.0.1:18515", kSenderA = "198.18.0.2:40000";

// A stream founded over path A: both ends through, each with its secret.
std::unique_ptr<Ends> found(const std::shared_ptr<const PresharedKey>& rx_key,
                            const std::shared_ptr<const PresharedKey>& tx_key) {
    auto e = std::make_unique<Ends>();
    std::unique_ptr<Datapath> rx_path = e->fabric.end(0);
    std::unique_ptr<Datapath> tx_path = e->fabric.end(1);
    const RingConfig ring = ring_with(rx_key);
    auto rxh = std::make_unique<Handshake>(*rx_path, Role::kReceiver, ring.slots, rx_key);
    auto txh = std::make_unique<Handshake>(*tx_path, Role::kSender, FrameSender::kMaxSlots, tx_key);
    run_ends(*e, std::move(rx_path), std::move(rxh), std::move(tx_path), std::move(txh), ring, sender_with(tx_key),
             true);
    return e;
}

// One end of a join: its key and the session secrets of the streams it
// runs (a dialler joins its first; a listener screens against all).
struct JoinEnd {
    std::shared_ptr<const PresharedKey> key;
    std::vector<std::shared_ptr<const SessionSecret>> streams;
};

struct Joining {
    std::unique_ptr<Ends> ends; // path B's, once through
    std::string screen_error;   // the listener's screen refused the request
};

// A join over path B, dialled by the end in role `dialler`: its hello asks
// to join its stream; the listener screens the request against its streams
// and, if it passes, joins the stream the token names.
Joining join(Role dialler, const JoinEnd& rx, const JoinEnd& tx, bool path_b = true) {
    Joining j;
    j.ends = std::make_unique<Ends>();
    std::unique_ptr<Datapath> rx_path = j.ends->fabric.end(0);
    std::unique_ptr<Datapath> tx_path = j.ends->fabric.end(1);
    const RingConfig ring = ring_with(rx.key);
    const bool rx_dials = dialler == Role::kReceiver;
    const JoinEnd& dials = rx_dials ? rx : tx;
    const JoinEnd& listens = rx_dials ? tx : rx;
    Datapath& dial_path = rx_dials ? *rx_path : *tx_path;
    Datapath& listen_path = rx_dials ? *tx_path : *rx_path;
    const std::uint32_t dial_slots = rx_dials ? ring.slots : FrameSender::kMaxSlots;
    const std::uint32_t listen_slots = rx_dials ? FrameSender::kMaxSlots : ring.slots;
    const Role listener = rx_dials ? Role::kSender : Role::kReceiver;
    auto dh = std::make_unique<Handshake>(
        dial_path, dialler, dial_slots, dials.key,
        Handshake::Join{dials.streams.at(0), path_b, true, rx_dials ? kSenderA : kReceiverA});
    Handshake::ScreenedJoin screened;
    try {
        screened = Handshake::screen_join(listener, listens.key != nullptr, listens.streams, dh->hello(),
                                          std::string("the ") + wire::name(dialler) + " " +
                                              (rx_dials ? kReceiverB : kSenderB));
    } catch (const std::exception& e) {
        j.screen_error = e.what();
        return j;
    }
    EXPECT_EQ(screened.path_b, path_b);
    auto lh = std::make_unique<Handshake>(
        listen_path, listener, listen_slots, listens.key,
        Handshake::Join{screened.secret, screened.path_b, false, rx_dials ? kReceiverA : kSenderA});
    auto rxh = rx_dials ? std::move(dh) : std::move(lh);
    auto txh = rx_dials ? std::move(lh) : std::move(dh);
    run_ends(*j.ends, std::move(rx_path), std::move(rxh), std::move(tx_path), std::move(txh), ring, sender_with(tx.key),
             false, kSenderB, kReceiverB);
    return j;
}

JoinEnd rx_of(const Ends& stream, std::shared_ptr<const PresharedKey> key) {
    return {std::move(key), {stream.rx_secret}};
}
JoinEnd tx_of(const Ends& stream, std::shared_ptr<const PresharedKey> key) {
    return {std::move(key), {stream.tx_secret}};
}

TEST(Join, AFoundingConnectionsEndsShareTheSecret) {
    auto a = found(key_of('a'), key_of('a'));
    ASSERT_EQ(a->rx_error, "");
    ASSERT_EQ(a->tx_error, "");
    ASSERT_NE(a->rx_secret, nullptr);
    EXPECT_EQ(a->rx_secret->token(), a->tx_secret->token());
    // Under the key, from the two hellos as sent (without the key, a
    // reader of path A's hellos could join).
    EXPECT_EQ(a->rx_secret->token(), SessionSecret(key_of('a').get(), a->tx_hello, a->rx_hello).token());
    EXPECT_NE(a->rx_secret->token(), SessionSecret(nullptr, a->tx_hello, a->rx_hello).token());
    auto b = found(key_of('a'), key_of('a'));
    EXPECT_NE(b->rx_secret->token(), a->rx_secret->token()); // another connection, other nonces
    auto keyless = found(nullptr, nullptr);
    ASSERT_NE(keyless->tx_secret, nullptr);
    EXPECT_EQ(keyless->tx_secret->token(), SessionSecret(nullptr, keyless->tx_hello, keyless->rx_hello).token());
    stream_frames(*a, 3); // path A streams as before
}

// Either end may dial both paths: the join goes through, both ends hold
// path B's stream ends, and frames cross path B.
TEST(Join, AGoodJoinPassesEitherEndDialling) {
    for (const Role dialler : {Role::kReceiver, Role::kSender}) {
        for (const bool path_b : {true, false}) {
            SCOPED_TRACE(std::string(wire::name(dialler)) + (path_b ? " dials path B" : " dials path A"));
            auto a = found(key_of('k'), key_of('k'));
            ASSERT_EQ(a->tx_error, "");
            Joining j = join(dialler, rx_of(*a, key_of('k')), tx_of(*a, key_of('k')), path_b);
            ASSERT_EQ(j.screen_error, "");
            ASSERT_EQ(j.ends->rx_error, "");
            ASSERT_EQ(j.ends->tx_error, "");
            EXPECT_EQ(j.ends->fabric.sends_posted(0), 2u); // the receiver's join proof, then its ring advert
            EXPECT_EQ(j.ends->tx->ring().addr, j.ends->rx->ring_advert().addr);
            stream_frames(*j.ends, 5);
            stream_frames(*a, 2); // path A unmoved
        }
    }
}

TEST(Join, NoKeyOnBothEndsWorks) {
    auto a = found(nullptr, nullptr);
    ASSERT_EQ(a->tx_error, "");
    Joining j = join(Role::kSender, rx_of(*a, nullptr), tx_of(*a, nullptr));
    ASSERT_EQ(j.screen_error, "");
    ASSERT_EQ(j.ends->rx_error, "");
    ASSERT_EQ(j.ends->tx_error, "");
    stream_frames(*j.ends, 3);
}

// A token no stream of the listener's has (another stream's, or a stream
// that ended) is refused at the screen, before anything is made for it.
TEST(Join, AWrongTokenIsRefusedAtTheScreen) {
    auto a = found(key_of('a'), key_of('a'));
    auto other = found(key_of('a'), key_of('a'));
    Joining j = join(Role::kSender, rx_of(*a, key_of('a')), tx_of(*other, key_of('a')));
    EXPECT_EQ(j.ends->fabric.sends_posted(0), 0u);
    std::string hex;
    for (const std::byte b : other->tx_secret->token()) hex += fmt::format("{:02x}", static_cast<unsigned>(b));
    EXPECT_EQ(j.screen_error,
              "no stream here has session token " + hex + ": it ended, or the sender " + kSenderB + " is not its peer");
    // A listener of several streams takes the one the token names.
    JoinEnd both = rx_of(*a, key_of('a'));
    both.streams.insert(both.streams.begin(), other->rx_secret);
    Joining ok = join(Role::kSender, both, tx_of(*a, key_of('a')));
    EXPECT_EQ(ok.screen_error, "");
    EXPECT_EQ(ok.ends->tx_error, "");
}

// The joiner holds another key: its own stream's secret (its token, its
// proofs) is another, so the screen refuses it; a key on one end only is
// refused by the hello's key flag, as on a founding connection.
TEST(Join, AKeyedStreamsJoinerWithAnotherKeyIsRefused) {
    auto a = found(key_of('a'), key_of('a'));
    auto theirs = found(key_of('b'), key_of('b'));
    Joining j = join(Role::kSender, rx_of(*a, key_of('a')), tx_of(*theirs, key_of('b')));
    EXPECT_NE(j.screen_error.find("no stream here has session token"), std::string::npos) << j.screen_error;
    Joining keyless = join(Role::kSender, rx_of(*a, key_of('a')), {nullptr, {a->tx_secret}});
    EXPECT_EQ(keyless.screen_error, "the sender " + kSenderB +
                                        " has no key but this receiver requires one: give both ends the same key "
                                        "file (--key-file)");
}

// A founding connection's handshake refuses a join's hello, and a join's
// refuses a founding one's or one for the other path, by name.
TEST(Join, AJoinHelloWhereAStreamIsFoundedAndViceVersaAreRefused) {
    const SessionSecret secret(nullptr, wire::encode(wire::SenderHello{8, false, fresh_nonce()}),
                               wire::encode(wire::ReceiverHello{8, false, fresh_nonce()}));
    const auto join_hello = wire::encode(wire::SenderHello{256, false, fresh_nonce(), {true, true, secret.token()}});
    const auto refusal = [](auto&& f) -> std::string {
        try {
            f();
        } catch (const std::exception& e) {
            return e.what();
        }
        return "(accepted)";
    };
    {
        MemoryFabric fabric;
        std::unique_ptr<Datapath> rx_path = fabric.end(0);
        Handshake founding(*rx_path, Role::kReceiver, 4, nullptr);
        EXPECT_EQ(refusal([&] { founding.take_peer_hello(join_hello, kSenderB); }),
                  "the sender " + kSenderB +
                      " asks to join a running stream (as its path B), but this receiver's "
                      "connection opens a new stream: it takes no join here");
        EXPECT_EQ(refusal([&] { Handshake::check_peer_hello(Role::kReceiver, false, join_hello, "the sender X"); }),
                  "the sender X asks to join a running stream (as its path B), but this receiver's connection opens "
                  "a new stream: it takes no join here");
        EXPECT_EQ(refusal([&] {
                      Handshake::screen_join(Role::kReceiver, false, {}, wire::encode(wire::SenderHello{8}),
                                             "the sender X");
                  }),
                  "the sender X asks for a new stream, not to join one");
    }
    const auto shared = std::make_shared<const SessionSecret>(nullptr, wire::encode(wire::SenderHello{8}),
                                                              wire::encode(wire::ReceiverHello{8}));
    {
        MemoryFabric fabric;
        std::unique_ptr<Datapath> rx_path = fabric.end(0);
        Handshake joining(*rx_path, Role::kReceiver, 4, nullptr, Handshake::Join{shared, true, true, kSenderA});
        EXPECT_EQ(refusal([&] { joining.take_peer_hello(wire::encode(wire::SenderHello{256}), kSenderB); }),
                  "the sender " + kSenderB +
                      "'s hello opens a new stream, but this receiver's connection joins a "
                      "running one as its path B");
        const auto path_a = wire::encode(wire::SenderHello{256, false, fresh_nonce(), {true, false, std::nullopt}});
        EXPECT_EQ(refusal([&] { joining.take_peer_hello(path_a, kSenderB); }),
                  "the sender " + kSenderB +
                      " takes this connection for the stream's path A, this receiver for its "
                      "path B");
        EXPECT_THROW(joining.session_secret(), std::logic_error); // a join's stream has its secret
        EXPECT_THROW(Handshake(*rx_path, Role::kReceiver, 4, nullptr, Handshake::Join{nullptr, true, true, ""}),
                     std::invalid_argument); // a join names its stream's secret
    }
    {
        // A listener made for one stream, given another's join request
        // (its screen skipped): refused by the token again.
        MemoryFabric fabric;
        std::unique_ptr<Datapath> rx_path = fabric.end(0);
        Handshake joining(*rx_path, Role::kReceiver, 4, nullptr, Handshake::Join{shared, true, false, kSenderA});
        EXPECT_NE(
            refusal([&] { joining.take_peer_hello(join_hello, kSenderB); }).find("no stream here has session token"),
            std::string::npos);
    }
}

// A hand-made dialler that saw the token on wire B (it travels in the
// clear), against a listening receiver of the stream: whatever proof it
// sends but the genuine one, the receiver refuses it by name, and all that
// reached the rogue is the receiver's own join proof: no ring advert.
TEST(Join, TheRingAdvertNeverReachesAnUnprovenJoiner) {
    const auto key = key_of('a');
    const auto founding_sender = wire::encode(wire::SenderHello{256, true, fresh_nonce()});
    const auto founding_receiver = wire::encode(wire::ReceiverHello{4, true, fresh_nonce()});
    const auto stream = std::make_shared<const SessionSecret>(key.get(), founding_sender, founding_receiver);
    for (const char* attack : {"another stream's secret, the same key", "this stream's hellos, another key",
                               "this stream's hellos, no key", "a proof from another connection", "our proof reflected",
                               "our proof relabelled", "a key proof", "no proof, a ring advert"}) {
        SCOPED_TRACE(attack);
        const std::string what = attack;
        MemoryFabric fabric;
        std::unique_ptr<Datapath> rx_path = fabric.end(0);
        RawPeer rogue(fabric.end(1));
        const auto rogue_hello =
            wire::encode(wire::SenderHello{256, true, fresh_nonce(), {true, true, stream->token()}});
        const std::vector<std::shared_ptr<const SessionSecret>> streams{stream};
        const auto screened =
            Handshake::screen_join(Role::kReceiver, true, streams, rogue_hello, "the sender " + kSenderB);
        ASSERT_EQ(screened.secret, stream); // the token is right: the screen cannot tell
        const RingConfig ring = ring_with(key);
        auto rxh = std::make_unique<Handshake>(*rx_path, Role::kReceiver, ring.slots, key,
                                               Handshake::Join{screened.secret, true, false, kSenderA});
        rxh->take_peer_hello(rogue_hello, kSenderB);
        const std::vector<std::byte> rx_hello(rxh->hello().begin(), rxh->hello().end());
        std::unique_ptr<FrameReceiver> rx;
        Running receiver(*rxh, [&] {
            rxh.reset();
            rx = std::make_unique<FrameReceiver>(std::move(rx_path), ring);
            rx->announce_ring();
        });
        auto theirs = rogue.next(2s); // the receiver's join proof comes first, whatever we do
        ASSERT_TRUE(theirs.has_value());
        EXPECT_EQ(theirs->kind, wire::Control::kJoin);
        const auto proof_under = [&](const SessionSecret& s) {
            return wire::encode(s.join_proof(Role::kSender, rogue_hello, rx_hello));
        };
        if (what == "another stream's secret, the same key") {
            const SessionSecret other(key.get(), founding_sender,
                                      wire::encode(wire::ReceiverHello{4, true, fresh_nonce()}));
            rogue.send(wire::Control::kJoin, proof_under(other));
        } else if (what == "this stream's hellos, another key") {
            rogue.send(wire::Control::kJoin,
                       proof_under(SessionSecret(key_of('b').get(), founding_sender, founding_receiver)));
        } else if (what == "this stream's hellos, no key") {
            rogue.send(wire::Control::kJoin, proof_under(SessionSecret(nullptr, founding_sender, founding_receiver)));
        } else if (what == "a proof from another connection") {
            // What a genuine joiner sent on another join of this stream
            // (other nonces): the right secret, the wrong connection.
            const auto old_sender =
                wire::encode(wire::SenderHello{256, true, fresh_nonce(), {true, true, stream->token()}});
            const auto old_receiver =
                wire::encode(wire::ReceiverHello{4, true, fresh_nonce(), {true, true, std::nullopt}});
            rogue.send(wire::Control::kJoin, wire::encode(stream->join_proof(Role::kSender, old_sender, old_receiver)));
        } else if (what == "our proof reflected") {
            rogue.send(wire::Control::kJoin, theirs->bytes);
        } else if (what == "our proof relabelled") {
            theirs->bytes[6] = std::byte{1}; // "from the sender": the MAC still says receiver
            rogue.send(wire::Control::kJoin, theirs->bytes);
        } else if (what == "a key proof") {
            rogue.send(wire::Control::kAuth, wire::encode(make_key_proof(*key, Role::kSender, rogue_hello, rx_hello)));
        } else {
            rogue.send(wire::Control::kRing, wire::encode(wire::RingAdvert{4, 8192, 0x1000, 7, false}));
        }
        const std::string error = receiver.join();
        EXPECT_EQ(rx, nullptr);
        const std::string not_the_peer = "path B: the sender " + kSenderB +
                                         " is not the peer of this stream's path A (" + kSenderA +
                                         "): its join proof does not match";
        if (what == "our proof reflected") {
            EXPECT_NE(error.find("a proof of ours reflected back"), std::string::npos) << error;
        } else if (what == "a key proof") {
            EXPECT_EQ(error, "the sender " + kSenderB + " sent a key proof this end did not ask for");
        } else if (what == "no proof, a ring advert") {
            EXPECT_EQ(error, "the sender " + kSenderB + " sent a ring advert: only receivers send those");
        } else {
            EXPECT_EQ(error, not_the_peer);
        }
        EXPECT_FALSE(rogue.next(200ms).has_value()); // nothing after the proof: no ring advert
        EXPECT_EQ(rogue.received_bytes(), wire::kJoinProofSize);
        rxh.reset();
    }
}

// The dialler checks the listener's proof too: a rogue listener on wire B
// (it answers the join, having read the token) is refused by name, and its
// ring advert is never taken, before a proof or after a wrong one.
TEST(Join, ADiallerRefusesARogueListener) {
    auto a = found(nullptr, nullptr);
    ASSERT_EQ(a->tx_error, "");
    for (const bool guesses : {true, false}) {
        SCOPED_TRACE(guesses ? "a guessed proof, then a ring advert" : "a ring advert, no proof");
        MemoryFabric fabric;
        RawPeer rogue(fabric.end(0));
        std::unique_ptr<Datapath> tx_path = fabric.end(1);
        Handshake txh(*tx_path, Role::kSender, FrameSender::kMaxSlots, nullptr,
                      Handshake::Join{a->tx_secret, true, true, kReceiverA});
        ASSERT_EQ(txh.hello().size(), wire::kJoinHelloSize);
        const auto rogue_hello = wire::encode(wire::ReceiverHello{4, false, fresh_nonce(), {true, true, std::nullopt}});
        txh.take_peer_hello(rogue_hello, kReceiverB);
        Running sender(txh);
        auto theirs = rogue.next(2s);
        ASSERT_TRUE(theirs.has_value());
        EXPECT_EQ(theirs->kind, wire::Control::kJoin);
        if (guesses) { // a proof under the secret a keyless stream of other hellos has
            const SessionSecret guess(nullptr, wire::encode(wire::SenderHello{256}),
                                      wire::encode(wire::ReceiverHello{4}));
            rogue.send(wire::Control::kJoin, wire::encode(guess.join_proof(Role::kReceiver, txh.hello(), rogue_hello)));
        }
        rogue.send(wire::Control::kRing, wire::encode(wire::RingAdvert{4, 8192, 0x1000, 7, false}));
        const std::string error = sender.join();
        EXPECT_EQ(error, guesses ? "path B: the receiver " + kReceiverB + " is not the peer of this stream's path A (" +
                                       kReceiverA + "): its join proof does not match"
                                 : "the receiver " + kReceiverB + " sent its ring advert before its join proof");
        EXPECT_THROW(txh.ring(), std::logic_error);
    }
}

} // namespace
} // namespace rdmastream::harness
