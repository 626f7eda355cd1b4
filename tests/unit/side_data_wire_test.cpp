// SPDX-License-Identifier: LGPL-2.1-or-later
// The side data block (wire/side_data_wire.hpp): what a sender writes after
// a frame's payload comes back entry for entry, and a block a peer made up
// is refused by name before any entry is handed out.
#include "rdmastream/error.hpp"
#include "wire/side_data_wire.hpp"
#include "wire/wire.hpp"

#include <gtest/gtest.h>

#include <array>
#include <string>
#include <vector>

namespace {

using rdmastream::SideData;
using rdmastream::SideDataKind;
namespace wire = rdmastream::wire;

std::vector<std::byte> bytes(std::initializer_list<unsigned> v) {
    std::vector<std::byte> out;
    for (unsigned b : v) out.push_back(static_cast<std::byte>(b));
    return out;
}

std::string refused(const std::vector<std::byte>& block) {
    std::array<SideData, rdmastream::kMaxSideDataEntries> out{};
    try {
        wire::decode_side_data(block, 7, out);
    } catch (const rdmastream::ProtocolError& e) {
        return e.what();
    }
    return "accepted";
}

TEST(SideData, RoundTripsEveryKind) {
    const auto cc = bytes({0xfc, 0x94, 0x20, 0xfd, 0x80, 0x80});
    const auto tc = bytes({0x01, 0x02, 0x03, 0x04});
    const std::vector<std::byte> md(24, std::byte{0x11});
    const auto cll = bytes({0xe8, 0x03, 0x90, 0x01});
    const SideData in[] = {{SideDataKind::kCaptions, cc},
                           {SideDataKind::kTimecode, tc},
                           {SideDataKind::kMasteringDisplay, md},
                           {SideDataKind::kContentLight, cll}};
    const std::size_t size = wire::side_data_size(in);
    EXPECT_EQ(size, 4 * rdmastream::kSideDataEntryHead + 6 + 4 + 24 + 4);
    std::vector<std::byte> block(size);
    EXPECT_EQ(wire::encode_side_data(in, block), size);
    std::array<SideData, rdmastream::kMaxSideDataEntries> out{};
    ASSERT_EQ(wire::decode_side_data(block, 0, out), 4u);
    for (std::size_t i = 0; i < 4; ++i) {
        EXPECT_EQ(out[i].kind, in[i].kind);
        EXPECT_EQ(std::vector<std::byte>(out[i].bytes.begin(), out[i].bytes.end()),
                  std::vector<std::byte>(in[i].bytes.begin(), in[i].bytes.end()));
    }
    EXPECT_EQ(wire::decode_side_data({}, 0, out), 0u); // no block, no entries
}

TEST(SideData, RefusesWhatAPeerMadeUp) {
    EXPECT_EQ(refused(bytes({1, 0, 3})), "slot 7 side data: 3 bytes left at offset 0, too few for an entry's 4-byte head");
    EXPECT_EQ(refused(bytes({9, 0, 0, 0})), "slot 7 side data entry 0 has unknown kind 9");
    EXPECT_EQ(refused(bytes({1, 0, 6, 0, 0xfc, 0x94, 0x20})),
              "slot 7 side data entry 0 (captions) claims 6 bytes, 3 are left in the block");
    EXPECT_EQ(refused(bytes({1, 0, 2, 0, 0xfc, 0x94})),
              "slot 7 side data entry 0 (captions) of 2 bytes: not a whole number of 3-byte cc_data triplets");
    EXPECT_EQ(refused(bytes({2, 0, 2, 0, 1, 2})),
              "slot 7 side data entry 0 (timecode) of 2 bytes: not 1 to 3 four-byte SMPTE 12M words");
    EXPECT_EQ(refused(bytes({4, 0, 4, 0, 1, 2, 3, 4, 4, 0, 4, 0, 1, 2, 3, 4})),
              "slot 7 side data has content light twice");
    EXPECT_EQ(refused(bytes({3, 0, 4, 0, 1, 2, 3, 4})),
              "slot 7 side data entry 0 (mastering display) of 4 bytes: not 24 bytes");
}

TEST(SideData, ASenderCannotWriteWhatAReceiverRefuses) {
    const auto two = bytes({1, 2});
    const SideData odd[] = {{SideDataKind::kCaptions, two}};
    EXPECT_THROW(wire::side_data_size(odd), rdmastream::UserError);
    const auto cll = bytes({1, 2, 3, 4});
    const SideData twice[] = {{SideDataKind::kContentLight, cll}, {SideDataKind::kContentLight, cll}};
    EXPECT_THROW(wire::side_data_size(twice), rdmastream::UserError);
    const SideData unknown[] = {{static_cast<SideDataKind>(0), cll}};
    EXPECT_THROW(wire::side_data_size(unknown), rdmastream::UserError);
}

// The slot header carries the block's size; payload and block must fit the
// slot together.
TEST(SideData, SlotHeaderCarriesItsSizeWithinTheSlot) {
    std::vector<std::byte> slot(wire::kSlotHeaderSize + 100);
    wire::SlotHeader h;
    h.payload_size = 80;
    h.side_data_size = 20;
    h.imm = {3, 9};
    wire::encode(h, std::span(slot).first<wire::kSlotHeaderSize>());
    EXPECT_EQ(wire::decode_slot_header(slot, {3, 9}).side_data_size, 20u);
    h.side_data_size = 21;
    wire::encode(h, std::span(slot).first<wire::kSlotHeaderSize>());
    try {
        wire::decode_slot_header(slot, {3, 9});
        FAIL() << "a block past the slot's end was accepted";
    } catch (const rdmastream::ProtocolError& e) {
        EXPECT_STREQ(e.what(), "slot 3 claims a 80 byte payload and 21 bytes of side data, room is 100");
    }
}

// The format declares the bound: carried, and refused above 64 KiB.
TEST(SideData, FormatDeclaresItsBound) {
    wire::StreamFormat f;
    f.id = 1;
    f.max_frame_size = 1000;
    f.max_side_data = 4096;
    f.caps = "video/x-raw";
    std::array<std::byte, wire::kControlPayloadMax> out{};
    const std::size_t n = wire::encode(f, out);
    EXPECT_EQ(wire::decode_stream_format(std::span(out).first(n)).max_side_data, 4096u);
    out[48 + 2] = std::byte{2}; // 0x21000: above 64 KiB
    try {
        wire::decode_stream_format(std::span(out).first(n));
        FAIL() << "135168 bytes of side data accepted";
    } catch (const rdmastream::ProtocolError& e) {
        EXPECT_STREQ(e.what(), "stream format declares 135168 bytes of side data per frame (at most 65536)");
    }
}

} // namespace
