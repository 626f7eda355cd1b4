// SPDX-License-Identifier: LGPL-2.1-or-later
// Reserved bits and bytes of every wire message must be zero: a decoder
// refuses each one that is set, and says which field. (docs/protocol.md,
// "What is checked".) Flipping one bit in an otherwise good message must be
// refused; the good message itself must pass.
#include "rdmastream/error.hpp"
#include "wire_test_bytes.hpp"
#include "wire/wire.hpp"

#include <gtest/gtest.h>

#include <array>
#include <string>
#include <vector>

namespace wire = rdmastream::wire;
using rdmastream::ProtocolError;

namespace {

using rdmastream::test::bytes_of;
using rdmastream::test::encoded;

// The decoder's refusal of `bytes`, as text ("" if it took them).
template <typename Decode>
std::string refusal(Decode decode, const std::vector<std::byte>& bytes) {
    try {
        decode(bytes);
    } catch (const ProtocolError& e) {
        return e.what();
    }
    return "";
}

// `bytes` with bit 0 of byte `at` flipped.
std::vector<std::byte> flipped(std::vector<std::byte> bytes, std::size_t at, std::byte bit = std::byte{1}) {
    bytes[at] ^= bit;
    return bytes;
}

const auto hello = [](const std::vector<std::byte>& b) { return wire::decode_sender_hello(b); };
const auto advert = [](const std::vector<std::byte>& b) { return wire::decode_ring_advert(b); };
const auto format = [](const std::vector<std::byte>& b) { return wire::decode_stream_format(b); };

// Protocols 3 to 7: bytes 6..7 are the hello's flags (bit 0: a key; since 7
// bit 1 join and bit 2 path B, the others reserved), 12..15 reserved, the
// nonce after them anything.
TEST(WireReserved, SenderHelloFlagBits3To15AndBytes12To15) {
    const auto good = bytes_of(wire::encode(wire::SenderHello{256, true, {}}));
    EXPECT_EQ(refusal(hello, good), "");
    EXPECT_NE(refusal(hello, flipped(good, 6, std::byte{8})).find("sender hello has unknown flags 0x0009"),
              std::string::npos);
    EXPECT_NE(refusal(hello, flipped(good, 7, std::byte{0x80})).find("sender hello has unknown flags"),
              std::string::npos);
    EXPECT_EQ(refusal(hello, flipped(good, 6, std::byte{2})), ""); // join
    EXPECT_NE(refusal(hello, flipped(good, 6, std::byte{4})).find("sender hello has flag path B (bit 2) without join"),
              std::string::npos);
    for (std::size_t at : {12u, 13u, 14u, 15u}) {
        EXPECT_NE(refusal(hello, flipped(good, at)).find("sender hello has reserved field reserved@12"),
                  std::string::npos)
            << at;
    }
    for (std::size_t at : {16u, 31u, 47u}) {
        EXPECT_EQ(refusal(hello, flipped(good, at)), "") << at; // the nonce
    }
}

TEST(WireReserved, ReceiverHelloFlagBits3To15AndBytes12To15) {
    const auto rhello = [](const std::vector<std::byte>& b) { return wire::decode_receiver_hello(b); };
    const auto good = bytes_of(wire::encode(wire::ReceiverHello{8, false, {}}));
    EXPECT_EQ(refusal(rhello, good), "");
    EXPECT_NE(refusal(rhello, flipped(good, 6, std::byte{0x10})).find("receiver hello has unknown flags 0x0010"),
              std::string::npos);
    EXPECT_NE(
        refusal(rhello, flipped(good, 6, std::byte{4})).find("receiver hello has flag path B (bit 2) without join"),
        std::string::npos);
    for (std::size_t at : {12u, 13u, 14u, 15u}) {
        EXPECT_NE(refusal(rhello, flipped(good, at)).find("receiver hello has reserved field reserved@12"),
                  std::string::npos)
            << at;
    }
}

TEST(WireReserved, KeyProofByte7) {
    const auto proof = [](const std::vector<std::byte>& b) {
        return wire::decode_key_proof(b, wire::Role::kReceiver);
    };
    const auto good = bytes_of(wire::encode(wire::KeyProof{wire::Role::kReceiver, {}}));
    EXPECT_EQ(refusal(proof, good), "");
    EXPECT_NE(refusal(proof, flipped(good, 7)).find("key proof has reserved field reserved@7"), std::string::npos);
}

TEST(WireReserved, RingAdvertFlagsAndByte29) {
    const auto good = bytes_of(wire::encode(wire::RingAdvert{8, 4096, 0x7f0000001000ull, 0x1234, true}));
    EXPECT_EQ(refusal(advert, good), "");
    EXPECT_TRUE(wire::decode_ring_advert(good).live); // bit 0 is defined
    EXPECT_NE(refusal(advert, flipped(good, 6, std::byte{4})).find("ring advert has flags 0x0005"),
              std::string::npos);
    // Bit 1 (windows) is defined, and then the window keys must follow.
    EXPECT_NE(refusal(advert, flipped(good, 6, std::byte{2})).find("its rkey must be 0"), std::string::npos);
    EXPECT_NE(refusal(advert, flipped(good, 7, std::byte{0x80})).find("reserved and must be zero"),
              std::string::npos);
    EXPECT_NE(refusal(advert, flipped(good, 29)).find("ring advert has reserved field reserved@29"),
              std::string::npos);
    // Byte 28 is the flow (below 15), 30..31 the first slot (the range within 4096).
    EXPECT_NE(refusal(advert, flipped(good, 28, std::byte{15})).find("ring advert is for flow 15 (flows 0..14)"),
              std::string::npos);
    EXPECT_EQ(wire::decode_ring_advert(flipped(good, 28, std::byte{14})).flow, 14);
    EXPECT_NE(refusal(advert, flipped(good, 31, std::byte{0x10})).find("ring advert's slots 4096..4103 go past "
                                                                      "slot 4095"),
              std::string::npos);
    auto padded = good; // CM padding past the 32 bytes is not the advert's: ignored
    padded.resize(196, std::byte{0xee});
    EXPECT_EQ(refusal(advert, padded), "");
}

wire::StreamFormat two_planes() {
    wire::StreamFormat f;
    f.id = 3;
    f.max_frame_size = 460800;
    f.plane_count = 2;
    f.planes[0] = {0, 640};
    f.planes[1] = {307200, 640};
    f.caps = "video/x-raw,format=NV12,width=640,height=480";
    return f;
}

TEST(WireReserved, StreamFormatBytes7And11) {
    const auto good = encoded(two_planes());
    EXPECT_EQ(refusal(format, good), "");
    // Byte 6 is the flow: below 15.
    EXPECT_EQ(wire::decode_stream_format(flipped(good, 6, std::byte{14})).flow, 14);
    EXPECT_NE(refusal(format, flipped(good, 6, std::byte{15})).find("stream format 3 is for flow 15 (flows 0..14)"),
              std::string::npos);
    EXPECT_NE(refusal(format, flipped(good, 7)).find("stream format has reserved field reserved@7"),
              std::string::npos);
    EXPECT_NE(refusal(format, flipped(good, 11)).find("stream format has reserved field reserved@11"),
              std::string::npos);
}

TEST(WireReserved, StreamFormatPlanesPastPlaneCount) {
    const auto good = encoded(two_planes());
    // Plane 2 starts at byte 16 + 2 * 8 = 32 (offset), 36 (stride); plane 3 at 40.
    for (std::size_t at : {32u, 36u, 40u, 47u}) {
        EXPECT_NE(refusal(format, flipped(good, at)).find("reserved field planes past plane_count"),
                  std::string::npos)
            << at;
    }
}

TEST(WireReserved, StreamFormatCarriesNothingAfterItsCaps) {
    auto longer = encoded(two_planes());
    longer.push_back(std::byte{0});
    EXPECT_NE(refusal(format, longer).find("a message carries nothing after its caps"), std::string::npos);
}

class SlotHeaderReserved : public ::testing::Test {
protected:
    std::vector<std::byte> slot = std::vector<std::byte>(512);
    void SetUp() override {
        wire::encode(wire::SlotHeader{5, 1, 2, 100, 0x000f, {1, 4}, 9, 12345},
                     std::span(slot).first<wire::kSlotHeaderSize>());
    }
    std::string refused(std::size_t at, std::byte bit = std::byte{1}) {
        slot[at] ^= bit;
        try {
            wire::decode_slot_header(slot, {1, 4});
        } catch (const ProtocolError& e) {
            slot[at] ^= bit;
            return e.what();
        }
        slot[at] ^= bit;
        return "";
    }
};

TEST_F(SlotHeaderReserved, GoodHeaderWithEveryDefinedFlagPasses) {
    EXPECT_EQ(wire::decode_slot_header(slot, {1, 4}).flags, 0x000f);
}

TEST_F(SlotHeaderReserved, FlagsAboveBit3) {
    EXPECT_NE(refused(6, std::byte{0x10}).find("slot 1 header has flags 0x001f"), std::string::npos);
    EXPECT_NE(refused(7, std::byte{0x80}).find("bits above 3 are reserved"), std::string::npos);
}

TEST_F(SlotHeaderReserved, Byte43) { // 42 is the flow (the receiver checks it), 44..47 the side data's size
    EXPECT_NE(refused(43).find("slot header has reserved field reserved@43 (offset 43"), std::string::npos);
    auto flow = slot;
    flow[42] = std::byte{3};
    EXPECT_EQ(wire::decode_slot_header(flow, {1, 4}).flow, 3);
}

TEST_F(SlotHeaderReserved, Bytes56To63) {
    for (std::size_t at = 56; at < 64; ++at) {
        EXPECT_NE(refused(at).find("slot header has reserved field reserved@56 (offset " + std::to_string(at)),
                  std::string::npos)
            << at;
    }
}

} // namespace
