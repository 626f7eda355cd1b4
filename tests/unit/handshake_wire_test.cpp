// SPDX-License-Identifier: LGPL-2.1-or-later
// The handshake's messages of protocols 3 to 7 (hellos both ways, key
// proofs; since 7 a join's hello flags, session token and join proof): round
// trips, and every field a decoder checks refused; older peers refused by
// their version, by name.
#include "rdmastream/error.hpp"
#include "wire_test_bytes.hpp"
#include "wire/wire.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace wire = rdmastream::wire;
using rdmastream::ProtocolError;

namespace {

using rdmastream::test::bytes_of;
using rdmastream::test::encoded;

wire::Nonce nonce(unsigned char seed) {
    wire::Nonce n{};
    for (std::size_t i = 0; i < n.size(); ++i) n[i] = std::byte(static_cast<unsigned char>(seed + i));
    return n;
}

std::string refusal(auto&& decode) {
    try {
        decode();
    } catch (const ProtocolError& e) {
        return e.what();
    }
    return "(accepted)";
}

TEST(SenderHello, CarriesKeyFlagAndNonce) {
    const auto b = wire::encode(wire::SenderHello{256, true, nonce(7)});
    ASSERT_EQ(b.size(), 48u); // fits the 56 bytes of a connect request's private data
    EXPECT_EQ(b[4], std::byte{7}); // version 7
    EXPECT_EQ(b[6], std::byte{1}); // flags: key
    EXPECT_EQ(b[16], std::byte{7}); // the nonce from offset 16
    const auto h = wire::decode_sender_hello(b);
    EXPECT_EQ(h.max_slots, 256u);
    EXPECT_TRUE(h.has_key);
    EXPECT_EQ(h.nonce, nonce(7));
    EXPECT_FALSE(wire::decode_sender_hello(wire::encode(wire::SenderHello{1, false, nonce(0)})).has_key);
}

TEST(SenderHello, RefusesUnknownFlagsAndReservedBytes) {
    auto b = bytes_of(wire::encode(wire::SenderHello{8, false, nonce(1)}));
    b[6] = std::byte{8}; // bits 0..2 are key, join and path B
    EXPECT_NE(refusal([&] { wire::decode_sender_hello(b); }).find("unknown flags"), std::string::npos);
    b = bytes_of(wire::encode(wire::SenderHello{8, false, nonce(1)}));
    b[13] = std::byte{1};
    EXPECT_NE(refusal([&] { wire::decode_sender_hello(b); }).find("reserved"), std::string::npos);
    b.resize(40); // cut inside the nonce
    EXPECT_NE(refusal([&] { wire::decode_sender_hello(b); }).find("too short"), std::string::npos);
}

// A version 2 sender's hello (16 bytes, no nonce): refused for its version,
// not for its length.
TEST(SenderHello, RefusesProtocolTwoByName) {
    std::vector<std::byte> v2(16, std::byte{0});
    const unsigned char head[] = {'R', 'D', 'M', 'H', 2, 0, 0, 0, 8, 0, 0, 0};
    for (std::size_t i = 0; i < sizeof head; ++i) v2[i] = std::byte{head[i]};
    EXPECT_EQ(refusal([&] { wire::decode_sender_hello(v2); }),
              "peer speaks rdmastream protocol 2, this is 7: upgrade it (both ends must run the same protocol)");
    v2[4] = std::byte{8}; // a newer peer: this end is the one to upgrade
    EXPECT_NE(refusal([&] { wire::decode_sender_hello(v2); }).find("protocol 8, this is 7: upgrade this end"),
              std::string::npos);
}

// Peers of versions 3 (4-byte credits, no window keys), 4 (no side data),
// 5 (one flow per stream) and 6 (one path per stream): their hellos are
// this one's size and layout, and are refused for the version alone, by
// name.
TEST(SenderHello, RefusesProtocolsThreeToSixByName) {
    for (const unsigned version : {3u, 4u, 5u, 6u}) {
        const std::string why = fmt::format("peer speaks rdmastream protocol {}, this is 7: upgrade it (both ends must "
                                            "run the same protocol)",
                                            version);
        auto sender = bytes_of(wire::encode(wire::SenderHello{8, false, nonce(1)}));
        sender[4] = static_cast<std::byte>(version);
        EXPECT_EQ(refusal([&] { wire::decode_sender_hello(sender); }), why);
        auto receiver = bytes_of(wire::encode(wire::ReceiverHello{8, false, nonce(1)}));
        receiver[4] = static_cast<std::byte>(version);
        EXPECT_EQ(refusal([&] { wire::decode_receiver_hello(receiver); }), why);
    }
}

wire::SessionToken token(unsigned char seed) {
    wire::SessionToken t{};
    for (std::size_t i = 0; i < t.size(); ++i) t[i] = std::byte(static_cast<unsigned char>(seed + 16 * i));
    return t;
}

// Two paths: a joining dialler's hello is 56 bytes, the token at 48..55 and
// flags join (bit 1) and path B (bit 2); the decoders read the flags, a
// listener's screen the token.
TEST(SenderHello, AJoinCarriesTheTokenIn56Bytes) {
    const auto b = wire::encode(wire::SenderHello{256, true, nonce(7), {true, true, token(0xa0)}});
    ASSERT_EQ(b.size(), 56u); // all a connect request's private data carries
    EXPECT_EQ(b[6], std::byte{1 | 2 | 4}); // key, join, path B
    EXPECT_EQ(b[7], std::byte{0});
    EXPECT_EQ(b[16], std::byte{7});     // the nonce where it was
    EXPECT_EQ(b[47], std::byte{7 + 31});
    for (std::size_t i = 0; i < 8; ++i) EXPECT_EQ(b[48 + i], token(0xa0)[i]) << i;
    const auto h = wire::decode_sender_hello(b);
    EXPECT_EQ(h.max_slots, 256u);
    EXPECT_TRUE(h.has_key);
    EXPECT_EQ(h.nonce, nonce(7));
    EXPECT_TRUE(h.join.join);
    EXPECT_TRUE(h.join.path_b);
    EXPECT_FALSE(h.join.token.has_value()); // read_join's to read
    const auto r = wire::read_join(wire::Role::kSender, b);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->token, token(0xa0));
    EXPECT_TRUE(r->path_b);
    // A receiver dials as well: its join, path A this time.
    const auto rb = wire::encode(wire::ReceiverHello{8, false, nonce(1), {true, false, token(3)}});
    ASSERT_EQ(rb.size(), 56u);
    EXPECT_EQ(rb[6], std::byte{2});
    const auto rr = wire::read_join(wire::Role::kReceiver, rb);
    ASSERT_TRUE(rr.has_value());
    EXPECT_EQ(rr->token, token(3));
    EXPECT_FALSE(rr->path_b);
}

// The listener's answer echoes the flags, in 48 bytes: no token.
TEST(ReceiverHello, AJoinsEchoIs48Bytes) {
    const auto b = wire::encode(wire::ReceiverHello{8, false, nonce(2), {true, true, std::nullopt}});
    ASSERT_EQ(b.size(), 48u);
    EXPECT_EQ(b[6], std::byte{2 | 4});
    auto padded = bytes_of(b);
    padded.resize(196, std::byte{0}); // an accept's private data
    const auto h = wire::decode_receiver_hello(padded);
    EXPECT_TRUE(h.join.join);
    EXPECT_TRUE(h.join.path_b);
    EXPECT_FALSE(h.join.token.has_value());
}

// Without the join flag, bytes 48..55 are padding as before version 7:
// whatever they hold, no join is read.
TEST(SenderHello, WithoutJoinTheTokenBytesArePadding) {
    const auto b = wire::encode(wire::SenderHello{8, false, nonce(1)});
    ASSERT_EQ(b.size(), 48u);
    EXPECT_EQ(b[6], std::byte{0});
    auto v = bytes_of(b);
    v.resize(56, std::byte{0x5a});
    EXPECT_FALSE(wire::decode_sender_hello(v).join.join);
    EXPECT_FALSE(wire::read_join(wire::Role::kSender, v).has_value());
}

TEST(JoinRequest, EveryFieldIsChecked) {
    const auto join = bytes_of(wire::encode(wire::SenderHello{8, false, nonce(1), {true, false, token(9)}}));
    ASSERT_EQ(join.size(), 56u);
    // A join flag in 48 bytes: no room for the token.
    EXPECT_EQ(refusal([&] { wire::read_join(wire::Role::kSender, std::span(join).first(48)); }),
              "sender hello asks to join a stream (flags bit 1) in 48 bytes: a join's hello carries the stream's "
              "session token at 48..55, 56 bytes");
    // The hello itself: version, magic (a receiver's is not a sender's),
    // flags, reserved bytes, slots.
    auto v = join;
    v[4] = std::byte{6};
    EXPECT_EQ(refusal([&] { wire::read_join(wire::Role::kSender, v); }),
              "peer speaks rdmastream protocol 6, this is 7: upgrade it (both ends must run the same protocol)");
    EXPECT_NE(refusal([&] { wire::read_join(wire::Role::kReceiver, join); }).find("bad magic"), std::string::npos);
    v = join;
    v[6] = std::byte{2 | 8};
    EXPECT_NE(refusal([&] { wire::read_join(wire::Role::kSender, v); }).find("unknown flags 0x000a"),
              std::string::npos);
    v = join;
    v[6] = std::byte{4};
    EXPECT_NE(refusal([&] { wire::read_join(wire::Role::kSender, v); }).find("path B (bit 2) without join (bit 1)"),
              std::string::npos);
    v = join;
    v[14] = std::byte{1};
    EXPECT_NE(refusal([&] { wire::read_join(wire::Role::kSender, v); }).find("reserved@12"), std::string::npos);
    v = join;
    v[8] = v[9] = v[10] = v[11] = std::byte{0};
    EXPECT_EQ(refusal([&] { wire::read_join(wire::Role::kSender, v); }), "sender hello takes no slots");
    auto r = bytes_of(wire::encode(wire::ReceiverHello{8, false, nonce(1), {true, false, token(9)}}));
    r[8] = std::byte{0x01};
    r[9] = std::byte{0x10}; // 4097 slots
    EXPECT_NE(refusal([&] { wire::read_join(wire::Role::kReceiver, r); }).find("4097 slots"), std::string::npos);
    EXPECT_THROW(wire::read_join(wire::Role::kSender, {}), ProtocolError);
}

// What the encoder will not write: a token or path B without the join flag.
TEST(SenderHello, NoTokenOrPathBWithoutJoin) {
    EXPECT_THROW(wire::encode(wire::SenderHello{8, false, nonce(1), {false, false, token(1)}}), std::invalid_argument);
    EXPECT_THROW(wire::encode(wire::ReceiverHello{8, false, nonce(1), {false, true, std::nullopt}}),
                 std::invalid_argument);
}

TEST(ReceiverHello, RoundTripsAndRefusesNonsense) {
    const auto b = wire::encode(wire::ReceiverHello{8, true, nonce(9)});
    EXPECT_EQ(b[3], std::byte{'R'}); // "RDMR"
    auto v = bytes_of(b);
    v.resize(196, std::byte{0}); // an accept's private data, padded
    const auto h = wire::decode_receiver_hello(v);
    EXPECT_EQ(h.slot_count, 8u);
    EXPECT_TRUE(h.has_key);
    EXPECT_EQ(h.nonce, nonce(9));
    EXPECT_THROW(wire::decode_receiver_hello(bytes_of(wire::encode(wire::ReceiverHello{0, false, {}}))), ProtocolError);
    EXPECT_THROW(wire::decode_receiver_hello(bytes_of(wire::encode(wire::ReceiverHello{4097, false, {}}))),
                 ProtocolError);
    // A sender's hello is not a receiver's.
    EXPECT_NE(refusal([&] { wire::decode_receiver_hello(wire::encode(wire::SenderHello{8, false, {}})); })
                  .find("bad magic"),
              std::string::npos);
    EXPECT_THROW(wire::decode_receiver_hello({}), ProtocolError);
}

// A version 2 receiver's private data was its ring advert ("RDMS"): refused
// for its version, by name.
TEST(ReceiverHello, RefusesAProtocolTwoRingAdvertByName) {
    std::vector<std::byte> v2(32, std::byte{0});
    const unsigned char head[] = {'R', 'D', 'M', 'S', 2, 0, 0, 0, 8};
    for (std::size_t i = 0; i < sizeof head; ++i) v2[i] = std::byte{head[i]};
    EXPECT_EQ(refusal([&] { wire::decode_receiver_hello(v2); }),
              "peer speaks rdmastream protocol 2, this is 7: upgrade it (both ends must run the same protocol)");
}

TEST(KeyProof, RoundTrips) {
    wire::KeyProof p{wire::Role::kReceiver, {}};
    for (std::size_t i = 0; i < p.mac.size(); ++i) p.mac[i] = std::byte(static_cast<unsigned char>(i * 3));
    const auto b = wire::encode(p);
    ASSERT_EQ(b.size(), 40u);
    EXPECT_EQ(b[3], std::byte{'P'}); // "RDMP"
    EXPECT_EQ(b[6], std::byte{2});   // role: receiver
    const auto got = wire::decode_key_proof(b, wire::Role::kReceiver);
    EXPECT_EQ(got.role, wire::Role::kReceiver);
    EXPECT_EQ(got.mac, p.mac);
}

// Our own proof sent back to us claims our role: refused before any MAC is
// computed, by name.
TEST(KeyProof, RefusesAReflectedProof) {
    const auto b = wire::encode(wire::KeyProof{wire::Role::kSender, {}});
    EXPECT_NE(refusal([&] { wire::decode_key_proof(b, wire::Role::kReceiver); }).find("reflected"),
              std::string::npos);
}

// The join proof (two paths): the key proof's layout with its own magic, so
// that neither passes for the other.
TEST(JoinProof, RoundTripsAndIsNoKeyProof) {
    wire::JoinProof p{wire::Role::kSender, {}};
    for (std::size_t i = 0; i < p.mac.size(); ++i) p.mac[i] = std::byte(static_cast<unsigned char>(i * 7));
    const auto b = wire::encode(p);
    ASSERT_EQ(b.size(), 40u);
    EXPECT_EQ(b[3], std::byte{'J'}); // "RDMJ"
    EXPECT_EQ(b[6], std::byte{1});   // role: sender
    const auto got = wire::decode_join_proof(b, wire::Role::kSender);
    EXPECT_EQ(got.role, wire::Role::kSender);
    EXPECT_EQ(got.mac, p.mac);
    EXPECT_NE(refusal([&] { wire::decode_join_proof(b, wire::Role::kReceiver); })
                  .find("sent a join proof made for the sender role: a proof of ours reflected"),
              std::string::npos);
    EXPECT_THROW(wire::decode_key_proof(b, wire::Role::kSender), ProtocolError);
    EXPECT_THROW(wire::decode_join_proof(wire::encode(wire::KeyProof{wire::Role::kSender, p.mac}), wire::Role::kSender),
                 ProtocolError);
    auto bad = bytes_of(b);
    bad[6] = std::byte{0};
    EXPECT_NE(refusal([&] { wire::decode_join_proof(bad, wire::Role::kSender); }).find("join proof names role 0"),
              std::string::npos);
}

TEST(KeyProof, RefusesNonsense) {
    auto b = bytes_of(wire::encode(wire::KeyProof{wire::Role::kSender, {}}));
    b[6] = std::byte{3};
    EXPECT_NE(refusal([&] { wire::decode_key_proof(b, wire::Role::kSender); }).find("role 3"), std::string::npos);
    b[6] = std::byte{1};
    b[7] = std::byte{1};
    EXPECT_NE(refusal([&] { wire::decode_key_proof(b, wire::Role::kSender); }).find("reserved"), std::string::npos);
    b[7] = std::byte{0};
    EXPECT_THROW(wire::decode_key_proof(std::span(b).first(39), wire::Role::kSender), ProtocolError);
    b[0] = std::byte{'X'};
    EXPECT_THROW(wire::decode_key_proof(b, wire::Role::kSender), ProtocolError);
}

TEST(Control, KnowsTheKeyProofLeavingClockAndJoinMessages) {
    EXPECT_EQ(wire::decode_control(wire::encode(wire::Control::kAuth)), wire::Control::kAuth);
    EXPECT_EQ(wire::decode_control(wire::encode(wire::Control::kLeaving)), wire::Control::kLeaving);
    EXPECT_EQ(wire::decode_control(wire::encode(wire::Control::kClock)), wire::Control::kClock);
    EXPECT_EQ(wire::encode(wire::Control::kJoin), 9u << 16 | wire::kControlSlot);
    EXPECT_EQ(wire::decode_control(9u << 16 | wire::kControlSlot), wire::Control::kJoin);
    EXPECT_THROW(wire::decode_control(10u << 16 | wire::kControlSlot), ProtocolError);
}

} // namespace
