// SPDX-License-Identifier: LGPL-2.1-or-later
// The handshake's messages of protocols 3 and 4 (hellos both ways, key proofs):
// round trips, and every field a decoder checks refused; older peers
// refused by their version, by name.
#include "rdmastream/error.hpp"
#include "wire_test_bytes.hpp"
#include "wire/wire.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

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
    EXPECT_EQ(b[4], std::byte{6}); // version 6
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
    b[6] = std::byte{2};
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
              "peer speaks rdmastream protocol 2, this is 6: upgrade it (both ends must run the same protocol)");
    v2[4] = std::byte{7}; // a newer peer: this end is the one to upgrade
    EXPECT_NE(refusal([&] { wire::decode_sender_hello(v2); }).find("protocol 7, this is 6: upgrade this end"),
              std::string::npos);
}

// Peers of versions 3 (4-byte credits, no window keys), 4 (no side data)
// and 5 (one flow per stream): their hellos are this one's size and
// layout, and are refused for the version alone, by name.
TEST(SenderHello, RefusesProtocolsThreeToFiveByName) {
    for (const unsigned version : {3u, 4u, 5u}) {
        const std::string why = fmt::format(
            "peer speaks rdmastream protocol {}, this is 6: upgrade it (both ends must run the same protocol)", version);
        auto sender = bytes_of(wire::encode(wire::SenderHello{8, false, nonce(1)}));
        sender[4] = static_cast<std::byte>(version);
        EXPECT_EQ(refusal([&] { wire::decode_sender_hello(sender); }), why);
        auto receiver = bytes_of(wire::encode(wire::ReceiverHello{8, false, nonce(1)}));
        receiver[4] = static_cast<std::byte>(version);
        EXPECT_EQ(refusal([&] { wire::decode_receiver_hello(receiver); }), why);
    }
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
              "peer speaks rdmastream protocol 2, this is 6: upgrade it (both ends must run the same protocol)");
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

TEST(Control, KnowsTheKeyProofLeavingAndClockMessages) {
    EXPECT_EQ(wire::decode_control(wire::encode(wire::Control::kAuth)), wire::Control::kAuth);
    EXPECT_EQ(wire::decode_control(wire::encode(wire::Control::kLeaving)), wire::Control::kLeaving);
    EXPECT_EQ(wire::decode_control(wire::encode(wire::Control::kClock)), wire::Control::kClock);
    EXPECT_THROW(wire::decode_control(9u << 16 | wire::kControlSlot), ProtocolError);
}

} // namespace
