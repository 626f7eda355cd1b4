// SPDX-License-Identifier: LGPL-2.1-or-later
// The wire decoders are the first thing untrusted bytes meet: every field
// they validate has a case here that must be refused.
#include "rdmastream/error.hpp"
#include "wire_test_bytes.hpp"
#include "wire/wire.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace wire = rdmastream::wire;
using rdmastream::ProtocolError;

namespace {

using rdmastream::test::bytes_of;
using rdmastream::test::encoded;

wire::RingAdvert good_advert() { return {8, 4096, 0x7f0000001000ull, 0x1234}; }

TEST(RingAdvert, RoundTrips) {
    const auto a = wire::decode_ring_advert(wire::encode(good_advert()));
    EXPECT_EQ(a.slot_count, 8u);
    EXPECT_EQ(a.slot_size, 4096u);
    EXPECT_EQ(a.addr, 0x7f0000001000ull);
    EXPECT_EQ(a.rkey, 0x1234u);
}

TEST(RingAdvert, IsLittleEndianOnTheWire) {
    const auto b = wire::encode(good_advert());
    EXPECT_EQ(b[0], std::byte{'R'});
    EXPECT_EQ(b[1], std::byte{'D'});
    EXPECT_EQ(b[2], std::byte{'M'});
    EXPECT_EQ(b[3], std::byte{'S'});
    EXPECT_EQ(b[8], std::byte{8}); // slot count, low byte first
}

TEST(RingAdvert, AcceptsCmPadding) {
    auto b = bytes_of(wire::encode(good_advert()));
    b.resize(196, std::byte{0}); // the IB CM pads private data
    EXPECT_EQ(wire::decode_ring_advert(b).rkey, 0x1234u);
}

TEST(RingAdvert, RefusesShortInput) {
    auto b = bytes_of(wire::encode(good_advert()));
    b.resize(wire::kRingAdvertSize - 1);
    EXPECT_THROW(wire::decode_ring_advert(b), ProtocolError);
    EXPECT_THROW(wire::decode_ring_advert({}), ProtocolError);
}

TEST(RingAdvert, RefusesBadMagicAndVersion) {
    auto b = bytes_of(wire::encode(good_advert()));
    b[0] = std::byte{'X'};
    EXPECT_THROW(wire::decode_ring_advert(b), ProtocolError);
    // A peer of protocol version 1 (one credit SEND per slot) is refused,
    // and the message names both versions.
    b = bytes_of(wire::encode(good_advert()));
    b[4] = std::byte{1};
    try {
        wire::decode_ring_advert(b);
        FAIL() << "version 1 accepted";
    } catch (const ProtocolError& e) {
        EXPECT_NE(std::string(e.what()).find("protocol 1, this is 7: upgrade it"), std::string::npos) << e.what();
    }
}

// With memory windows the ring has no rkey of its own, and each slot's first
// window key follows the 32 bytes.
TEST(RingAdvert, CarriesWindowKeysPerSlot) {
    wire::RingAdvert in{3, 4096, 0x7f0000001000ull, 0, false, {0x80000101u, 0x80000202u, 0x80000303u}};
    const auto b = wire::encode(in);
    ASSERT_EQ(b.size(), wire::kRingAdvertSize + 3 * wire::kWindowKeySize);
    EXPECT_EQ(b[6], std::byte{2}); // flags bit 1: windows
    EXPECT_EQ(b[32], std::byte{0x01}); // slot 0's key, low byte first
    const auto a = wire::decode_ring_advert(b);
    ASSERT_TRUE(a.windows());
    EXPECT_EQ(a.slot_rkeys, in.slot_rkeys);
    EXPECT_EQ(a.first_rkey(2), 0x80000303u);
    EXPECT_FALSE(wire::decode_ring_advert(wire::encode(good_advert())).windows());
    EXPECT_EQ(wire::decode_ring_advert(wire::encode(good_advert())).first_rkey(5), 0x1234u);
}

TEST(RingAdvert, RefusesWindowsWithARingKeyOrMissingKeys) {
    wire::RingAdvert in{3, 4096, 0x7f0000001000ull, 0, false, {1, 2, 3}};
    auto b = wire::encode(in);
    b[24] = std::byte{0x34}; // a ring rkey besides the windows
    try {
        wire::decode_ring_advert(b);
        FAIL() << "a ring rkey with windows accepted";
    } catch (const ProtocolError& e) {
        EXPECT_NE(std::string(e.what()).find("its rkey must be 0"), std::string::npos) << e.what();
    }
    b = wire::encode(in);
    b.resize(b.size() - 1); // the last key cut
    try {
        wire::decode_ring_advert(b);
        FAIL() << "a short key table accepted";
    } catch (const ProtocolError& e) {
        EXPECT_NE(std::string(e.what()).find("ring advert with memory windows too short: 43 bytes, need 44"),
                  std::string::npos)
            << e.what();
    }
}

TEST(RingAdvert, RefusesImpossibleRings) {
    auto with = [](auto change) {
        auto a = good_advert();
        change(a);
        return bytes_of(wire::encode(a));
    };
    EXPECT_THROW(wire::decode_ring_advert(with([](auto& a) { a.slot_count = 0; })), ProtocolError);
    EXPECT_THROW(wire::decode_ring_advert(with([](auto& a) { a.slot_count = wire::kMaxSlots + 1; })), ProtocolError);
    EXPECT_THROW(wire::decode_ring_advert(with([](auto& a) { a.slot_size = wire::kSlotHeaderSize; })), ProtocolError);
    EXPECT_THROW(wire::decode_ring_advert(with([](auto& a) { a.slot_size = (1u << 30) + 1; })), ProtocolError);
    EXPECT_THROW(wire::decode_ring_advert(with([](auto& a) { a.addr = 0; })), ProtocolError);
    EXPECT_THROW(wire::decode_ring_advert(with([](auto& a) { a.addr = ~0ull - 100; })), ProtocolError);
}

TEST(SlotImm, RoundTripsAndRefusesOutOfRangeSlots) {
    const std::uint32_t v = wire::encode(wire::SlotImm{5, 0xabcd});
    EXPECT_EQ(v, 0xabcd0005u);
    const auto imm = wire::decode_slot_imm(v, 8);
    EXPECT_EQ(imm.slot, 5);
    EXPECT_EQ(imm.generation, 0xabcd);
    EXPECT_THROW(wire::decode_slot_imm(v, 5), ProtocolError);
    EXPECT_THROW(wire::decode_slot_imm(0xffff, 8), ProtocolError);
}

class SlotHeaderTest : public ::testing::Test {
protected:
    std::vector<std::byte> slot = std::vector<std::byte>(1024);
    wire::SlotHeader header{42, -7, 1001, 500, 3, {2, 9}};
    void SetUp() override { wire::encode(header, std::span(slot).first<wire::kSlotHeaderSize>()); }
};

TEST_F(SlotHeaderTest, RoundTrips) {
    const auto h = wire::decode_slot_header(slot, {2, 9});
    EXPECT_EQ(h.sequence, 42u);
    EXPECT_EQ(h.pts, -7);
    EXPECT_EQ(h.duration, 1001);
    EXPECT_EQ(h.payload_size, 500u);
    EXPECT_EQ(h.flags, 3);
}

TEST_F(SlotHeaderTest, RefusesMismatchedImmediate) {
    EXPECT_THROW(wire::decode_slot_header(slot, {3, 9}), ProtocolError);  // other slot
    EXPECT_THROW(wire::decode_slot_header(slot, {2, 10}), ProtocolError); // stale generation
}

TEST_F(SlotHeaderTest, RefusesPayloadLargerThanSlot) {
    header.payload_size = 1024 - wire::kSlotHeaderSize + 1;
    wire::encode(header, std::span(slot).first<wire::kSlotHeaderSize>());
    EXPECT_THROW(wire::decode_slot_header(slot, {2, 9}), ProtocolError);
    header.payload_size = 1024 - wire::kSlotHeaderSize; // exactly full is fine
    wire::encode(header, std::span(slot).first<wire::kSlotHeaderSize>());
    EXPECT_NO_THROW(wire::decode_slot_header(slot, {2, 9}));
}

TEST_F(SlotHeaderTest, RefusesGarbage) {
    slot[0] = std::byte{0};
    EXPECT_THROW(wire::decode_slot_header(slot, {2, 9}), ProtocolError);
    EXPECT_THROW(wire::decode_slot_header(std::span(slot).first(wire::kSlotHeaderSize), {2, 9}), ProtocolError);
}

} // namespace

namespace {

TEST(SenderHello, RoundTripsAndRefusesNonsense) {
    const auto b = wire::encode(wire::SenderHello{256});
    EXPECT_EQ(wire::decode_sender_hello(b).max_slots, 256u);
    auto v = bytes_of(b);
    v.resize(56, std::byte{0}); // CM padding is fine
    EXPECT_EQ(wire::decode_sender_hello(v).max_slots, 256u);
    EXPECT_THROW(wire::decode_sender_hello(std::span(v).first(8)), ProtocolError);
    EXPECT_THROW(wire::decode_sender_hello(bytes_of(wire::encode(wire::SenderHello{0}))), ProtocolError);
    v = bytes_of(wire::encode(good_advert())); // an advert is not a hello
    EXPECT_THROW(wire::decode_sender_hello(v), ProtocolError);
    EXPECT_THROW(wire::decode_sender_hello({}), ProtocolError); // e.g. rping's empty private data
}

TEST(Reject, CarriesAReadableReason) {
    const auto b = wire::encode(wire::Reject{wire::RejectReason::kConfig, "ring too big"});
    const auto r = wire::decode_reject(b);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->reason, wire::RejectReason::kConfig);
    EXPECT_EQ(r->text, "ring too big");
}

TEST(Reject, TruncatesLongTextAndSanitisesControlBytes) {
    const auto b = wire::encode(wire::Reject{wire::RejectReason::kProtocol, std::string(500, 'x')});
    EXPECT_EQ(wire::decode_reject(b)->text.size(), wire::kRejectTextMax);
    auto v = bytes_of(wire::encode(wire::Reject{wire::RejectReason::kProtocol, "ab"}));
    v[9] = std::byte{0x1b}; // an escape sequence from a hostile peer
    EXPECT_EQ(wire::decode_reject(v)->text, "a?");
}

TEST(Reject, IgnoresForeignRejects) {
    std::vector<std::byte> zeros(148); // what the IB CM sends when no one listens
    EXPECT_FALSE(wire::decode_reject(zeros).has_value());
    EXPECT_FALSE(wire::decode_reject({}).has_value());
}

} // namespace

namespace {
TEST(Control, EndOfStreamIsNeverASlot) {
    const std::uint32_t v = wire::encode(wire::Control::kEndOfStream);
    EXPECT_EQ(wire::decode_control(v), wire::Control::kEndOfStream);
    EXPECT_THROW(wire::decode_slot_imm(v, wire::kMaxSlots), ProtocolError);
    EXPECT_THROW(wire::decode_control(0x000a0000u | wire::kControlSlot), ProtocolError); // unknown kind
    EXPECT_THROW(wire::decode_control(wire::kControlSlot), ProtocolError);                 // kind 0
    EXPECT_THROW(wire::decode_control(wire::encode(wire::SlotImm{3, 1})), ProtocolError); // a frame's imm
}

TEST(Credits, RoundTripInAnyOrder) {
    const std::vector<wire::Credit> in{{{5, 1}, 0x80000a01u}, {{0, 7}, 0x1234u}, {{3, 65535}, 0xffffffffu}};
    std::vector<std::byte> buf(in.size() * wire::kCreditSize);
    ASSERT_EQ(wire::encode_credits(in, buf), buf.size());
    std::vector<wire::Credit> out(8);
    ASSERT_EQ(wire::decode_credits(buf, 8, out), in.size());
    for (std::size_t i = 0; i < in.size(); ++i) {
        EXPECT_EQ(out[i].imm.slot, in[i].imm.slot);
        EXPECT_EQ(out[i].imm.generation, in[i].imm.generation);
        EXPECT_EQ(out[i].rkey, in[i].rkey);
    }
    EXPECT_EQ(wire::decode_control(wire::encode(wire::Control::kCredits)), wire::Control::kCredits);
}

// Protocol 4's entry: 8 bytes, the immediate then the rkey, little-endian.
TEST(Credits, EntryIsImmThenRkey) {
    ASSERT_EQ(wire::kCreditSize, 8u);
    std::vector<std::byte> buf(wire::kCreditSize);
    wire::encode_credits(std::vector<wire::Credit>{{{2, 0x0103}, 0xa1b2c3d4u}}, buf);
    const unsigned char want[] = {0x02, 0x00, 0x03, 0x01, 0xd4, 0xc3, 0xb2, 0xa1};
    for (std::size_t i = 0; i < sizeof want; ++i) EXPECT_EQ(buf[i], std::byte{want[i]}) << i;
}

TEST(Credits, RefusesBadLengthsAndSlots) {
    std::vector<wire::Credit> out(4);
    std::vector<std::byte> buf(wire::kCreditSize * 5);
    wire::encode_credits(std::vector<wire::Credit>(5, wire::Credit{{1, 0}, 7}), buf);
    EXPECT_THROW(wire::decode_credits({}, 4, out), ProtocolError);                          // no credit
    EXPECT_THROW(wire::decode_credits(std::span(buf).first(6), 4, out), ProtocolError);     // not whole entries
    EXPECT_THROW(wire::decode_credits(std::span(buf).first(4), 4, out), ProtocolError);     // a version 3 entry
    EXPECT_THROW(wire::decode_credits(std::span(buf).first(12), 4, out), ProtocolError);    // one and a half
    EXPECT_THROW(wire::decode_credits(buf, 4, out), ProtocolError);                         // more than the ring
    wire::encode_credits(std::vector<wire::Credit>{{{4, 0}, 7}}, buf);
    EXPECT_THROW(wire::decode_credits(std::span(buf).first(8), 4, out), ProtocolError);     // slot out of range
}
} // namespace

namespace {

wire::StreamFormat i420() {
    wire::StreamFormat f;
    f.id = 7;
    f.max_frame_size = 3110400;
    f.plane_count = 3;
    f.planes[0] = {0, 1920};
    f.planes[1] = {2073600, 960};
    f.planes[2] = {2592000, 960};
    f.caps = "video/x-raw,format=I420,width=1920,height=1080,framerate=60/1";
    return f;
}

TEST(StreamFormat, RoundTrips) {
    const auto f = wire::decode_stream_format(encoded(i420()));
    EXPECT_EQ(f.id, 7);
    EXPECT_EQ(f.max_frame_size, 3110400u);
    ASSERT_EQ(f.plane_count, 3);
    EXPECT_EQ(f.planes[1].offset, 2073600u);
    EXPECT_EQ(f.planes[2].stride, 960u);
    EXPECT_EQ(f.caps, i420().caps);
}

TEST(StreamFormat, RefusesWhatCannotBeTrue) {
    auto bad = [](auto change) {
        auto f = i420();
        change(f);
        return encoded(f);
    };
    EXPECT_THROW(wire::decode_stream_format(bad([](auto& f) { f.id = 0; })), ProtocolError);
    EXPECT_THROW(wire::decode_stream_format(bad([](auto& f) { f.max_frame_size = 0; })), ProtocolError);
    EXPECT_THROW(wire::decode_stream_format(bad([](auto& f) { f.planes[2].offset = 3110400; })), ProtocolError);
    EXPECT_THROW(wire::decode_stream_format(bad([](auto& f) { f.caps = "video/x-raw\n"; })), ProtocolError);
    auto v = encoded(i420());
    v[10] = std::byte{5}; // five planes
    EXPECT_THROW(wire::decode_stream_format(v), ProtocolError);
    v = encoded(i420());
    v.resize(v.size() - 1); // caps cut short
    EXPECT_THROW(wire::decode_stream_format(v), ProtocolError);
    v = encoded(i420());
    v[0] = std::byte{0};
    EXPECT_THROW(wire::decode_stream_format(v), ProtocolError);
}

// fuzz_caps_agree: caps of 20 nested structures ("...,f=[w,f=[w,...]]")
// kept gst_caps_from_string busy for 18 s and 175 MB (exponential in the
// depth); rdmasrc parses a sender's caps on its streaming thread.
TEST(StreamFormat, RefusesCapsNestedDeeperThanGStreamerParsesQuickly) {
    auto nested = [](std::size_t depth) {
        auto f = i420();
        f.caps = "video/x-raw";
        for (std::size_t i = 0; i < depth; ++i) f.caps += ",f=[w";
        f.caps += ",T=(buffer)er";
        f.caps += std::string(depth, ']');
        return encoded(f);
    };
    EXPECT_NO_THROW(wire::decode_stream_format(nested(wire::kMaxCapsNesting - 1))); // "(buffer)" is one more
    EXPECT_THROW(wire::decode_stream_format(nested(wire::kMaxCapsNesting)), ProtocolError);
    EXPECT_THROW(wire::decode_stream_format(nested(20)), ProtocolError);
    auto f = i420();
    f.caps = "video/x-raw(memory:SystemMemory), format=(string)I420, s=[a, b=(int)<1, 2>]"; // 3 deep
    EXPECT_EQ(wire::decode_stream_format(encoded(f)).caps, f.caps);
}

TEST(SlotHeader, CarriesTheFormatId) {
    std::vector<std::byte> slot(256);
    wire::encode(wire::SlotHeader{1, 0, 0, 10, 0, {0, 0}, 42}, std::span(slot).first<wire::kSlotHeaderSize>());
    EXPECT_EQ(wire::decode_slot_header(slot, {0, 0}).format_id, 42);
}

// sent_at sits at offset 48, little-endian (docs/protocol.md), and the bytes
// around it stay zero.
TEST(SlotHeader, CarriesTheSendTimeAtItsOffset) {
    std::vector<std::byte> slot(256, std::byte{0xff});
    const std::uint64_t t = 0x0102030405060708;
    wire::encode(wire::SlotHeader{1, 0, 0, 10, 0, {0, 0}, 42, t}, std::span(slot).first<wire::kSlotHeaderSize>());
    EXPECT_EQ(wire::decode_slot_header(slot, {0, 0}).sent_at_ns, t);
    EXPECT_EQ(slot[48], std::byte{0x08});
    EXPECT_EQ(slot[55], std::byte{0x01});
    for (std::size_t i : {42u, 47u, 56u, 63u}) {
        EXPECT_EQ(slot[i], std::byte{0}) << "reserved byte " << i;
    }
}

} // namespace
