// SPDX-License-Identifier: LGPL-2.1-or-later
// Hostile peers over the in-memory fabric: a test plays one end by hand
// (raw work requests on a fabric end of its own) against a genuine
// FrameSender or FrameReceiver on the other, and sends what a correct peer
// never would. Each must be refused with a ProtocolError that names the peer
// ("harness end N") and the reason (docs/protocol.md, "What is checked").
#include "memory_fabric.hpp"

#include "rdmastream/error.hpp"
#include "stream/frame_receiver.hpp"
#include "stream/frame_sender.hpp"

#include <arpa/inet.h>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace rdmastream::harness {
namespace {

using namespace std::chrono_literals;

constexpr std::uint32_t kSlot = 4096 + wire::kSlotHeaderSize;
constexpr int kAccessRing = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;

// The ProtocolError `fn` throws, as text; fails the test if it throws none
// (or something else).
std::string refusal(const std::function<void()>& fn) {
    try {
        fn();
    } catch (const ProtocolError& e) {
        return e.what();
    } catch (const std::exception& e) {
        ADD_FAILURE() << "not a ProtocolError: " << e.what();
        return e.what();
    }
    ADD_FAILURE() << "nothing was refused";
    return "";
}

// `text` is evaluated once (it may be the refusal itself).
#define EXPECT_HAS(text, part)                                                                                        \
    do {                                                                                                              \
        const std::string got_ = (text);                                                                              \
        EXPECT_NE(got_.find(part), std::string::npos) << got_;                                                        \
    } while (0)

// A fabric end played by hand: sends and writes built from raw bytes.
struct RawEnd {
    explicit RawEnd(std::unique_ptr<Datapath> p)
        : path(std::move(p)), out(path->register_memory(8192, 0)),
          in(path->register_memory(4 * wire::kControlPayloadMax, IBV_ACCESS_LOCAL_WRITE)) {}

    // Receives for the other end's control messages (a format, a keepalive).
    void post_receives(int n) {
        for (int i = 0; i < n; ++i) {
            ibv_sge sge{in.addr() + std::uint64_t(i % 4) * wire::kControlPayloadMax,
                        static_cast<std::uint32_t>(wire::kControlPayloadMax), in.lkey()};
            ibv_recv_wr wr{};
            wr.wr_id = static_cast<std::uint64_t>(i);
            wr.sg_list = &sge;
            wr.num_sge = 1;
            path->post_recv(wr, "raw receive");
        }
    }
    void send(std::span<const std::byte> payload, std::optional<std::uint32_t> imm) {
        std::copy(payload.begin(), payload.end(), out.bytes().begin());
        ibv_sge sge{out.addr(), static_cast<std::uint32_t>(payload.size()), out.lkey()};
        ibv_send_wr wr{};
        wr.sg_list = &sge;
        wr.num_sge = payload.empty() ? 0 : 1;
        wr.opcode = imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND;
        wr.imm_data = imm ? htonl(*imm) : 0;
        path->post_send(wr, "raw send");
    }
    void control(wire::Control kind, std::span<const std::byte> payload = {}) {
        send(payload, wire::encode(kind));
    }
    // Credits for `list`, each carrying `rkey`.
    void credits(const std::vector<wire::SlotImm>& list, std::uint32_t rkey) {
        std::vector<wire::Credit> entries;
        for (const wire::SlotImm& imm : list) entries.push_back({imm, rkey});
        std::vector<std::byte> bytes(entries.size() * wire::kCreditSize);
        wire::encode_credits(entries, bytes);
        control(wire::Control::kCredits, bytes);
    }
    // A frame into (slot, generation) of `ring`: a header from `header`
    // (slot, generation and payload size filled in here), `payload` bytes,
    // written with `rkey` (default: the slot's first key, as the advert
    // gave it). `fill` gives the payload's bytes.
    void frame(const wire::RingAdvert& ring, wire::SlotImm imm, wire::SlotHeader header, std::uint32_t payload = 16,
               const std::function<void(std::span<std::byte>)>& spoil = {}, std::optional<std::uint32_t> rkey = {},
               std::byte fill = std::byte{0}) {
        header.imm = imm;
        header.payload_size = payload;
        const auto bytes = out.bytes().first(wire::kSlotHeaderSize + payload);
        std::fill(bytes.begin() + wire::kSlotHeaderSize, bytes.end(), fill);
        wire::encode(header, bytes.first<wire::kSlotHeaderSize>());
        if (spoil) spoil(bytes);
        ibv_sge sge{out.addr(), static_cast<std::uint32_t>(bytes.size()), out.lkey()};
        ibv_send_wr wr{};
        wr.sg_list = &sge;
        wr.num_sge = 1;
        wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
        wr.imm_data = htonl(wire::encode(imm));
        const std::uint32_t in_range = imm.slot - ring.slot_base; // the slot in the flow's range
        wr.wr.rdma.remote_addr = ring.addr + std::uint64_t{in_range} * ring.slot_size;
        wr.wr.rdma.rkey = rkey ? *rkey : ring.first_rkey(in_range);
        wr.send_flags = IBV_SEND_SIGNALED; // the rogue sees its own write's fate
        path->post_send(wr, "raw write");
    }
    // The status of the next completion of ours (a signalled write's).
    ibv_wc_status last_status() {
        std::array<ibv_wc, 4> wc{};
        ibv_wc_status status = IBV_WC_SUCCESS;
        for (std::size_t n = path->poll(wc); n > 0; n = path->poll(wc)) {
            for (std::size_t i = 0; i < n; ++i) {
                if (wc[i].opcode == IBV_WC_RDMA_WRITE || wc[i].status != IBV_WC_SUCCESS) status = wc[i].status;
            }
        }
        return status;
    }

    std::unique_ptr<Datapath> path;
    RegisteredRegion out;
    RegisteredRegion in;
};

std::span<const std::byte> advert_bytes(const wire::RingAdvert& a, wire::RingAdvertBytes& keep) {
    keep = wire::encode(a);
    return keep;
}

// ---- a hostile receiver against a genuine FrameSender --------------------

struct RogueReceiver {
    MemoryFabric fabric;
    RawEnd rogue{fabric.end(0)};
    RegisteredRegion ring = rogue.path->register_memory(4 * kSlot, kAccessRing);
    RegisteredRegion bigger = rogue.path->register_memory(4 * 3 * kSlot, kAccessRing);
    std::unique_ptr<FrameSender> tx =
        std::make_unique<FrameSender>(fabric.end(1), wire::RingAdvert{4, kSlot, ring.addr(), ring.rkey(), false},
                                      SenderOptions{});
    RegisteredRegion payload = tx->register_memory(4096, 0);

    RogueReceiver() { rogue.post_receives(8); }
    void send_frame() { tx->send(payload.bytes().first(100), payload.lkey(), FrameMeta{}, 0, 1s); }
    wire::StreamFormat format(std::uint32_t max_frame) const {
        wire::StreamFormat f;
        f.id = 1;
        f.max_frame_size = max_frame;
        f.caps = "application/x-test";
        return f;
    }
};

TEST(HostileReceiver, AnUnsolicitedRingAdvertIsRefused) {
    RogueReceiver r;
    wire::RingAdvertBytes keep;
    r.rogue.control(wire::Control::kRing, advert_bytes({4, kSlot, r.bigger.addr(), r.bigger.rkey(), false}, keep));
    const std::string why = refusal([&] { r.tx->progress(); });
    EXPECT_HAS(why, "sender: refused the receiver at harness end 0: ");
    EXPECT_HAS(why, "a ring advert the sender did not ask for");
}

TEST(HostileReceiver, ASecondRingForOneFormatIsRefused) {
    RogueReceiver r;
    r.tx->begin_format(r.format(2 * kSlot)); // outgrows the slots: one new ring is due
    wire::RingAdvertBytes keep;
    const wire::RingAdvert grown{4, 3 * kSlot, r.bigger.addr(), r.bigger.rkey(), false};
    r.rogue.control(wire::Control::kRing, advert_bytes(grown, keep));
    EXPECT_TRUE(r.tx->format_settled());
    EXPECT_EQ(r.tx->ring().slot_size, 3 * kSlot);
    r.rogue.control(wire::Control::kRing, advert_bytes(grown, keep));
    EXPECT_HAS(refusal([&] { r.tx->progress(); }), "a ring advert the sender did not ask for");
}

TEST(HostileReceiver, ANewRingTooSmallForTheFormatIsRefused) {
    RogueReceiver r;
    r.tx->begin_format(r.format(2 * kSlot));
    wire::RingAdvertBytes keep;
    r.rogue.control(wire::Control::kRing, advert_bytes({4, kSlot + 4096, r.bigger.addr(), r.bigger.rkey(), false}, keep));
    const std::string why = refusal([&] { r.tx->format_settled(); });
    EXPECT_HAS(why, "refused the receiver at harness end 0: ");
    EXPECT_HAS(why, "too small for the 8320-byte frames they are for");
}

TEST(HostileReceiver, ACreditForASlotNeverHandedOutIsRefused) {
    RogueReceiver r;
    r.send_frame(); // slot 0; slots 1..3 were never handed out
    r.rogue.credits({{2, 1}}, r.ring.rkey());
    const std::string why = refusal([&] { r.tx->progress(); });
    EXPECT_HAS(why, "refused the receiver at harness end 0: credit for slot 2, which the sender already holds");
}

TEST(HostileReceiver, ACreditGivenTwiceIsRefused) {
    RogueReceiver r;
    r.send_frame();
    r.rogue.credits({{0, 1}}, r.ring.rkey());
    r.tx->progress(); // the honest credit: taken
    EXPECT_EQ(r.tx->credits_available(), 4u);
    r.rogue.credits({{0, 1}}, r.ring.rkey());
    EXPECT_HAS(refusal([&] { r.tx->progress(); }),
               "refused the receiver at harness end 0: credit for slot 0, which the sender already holds");
}

// Without windows the ring has one key, and a credit carrying another is
// refused (with windows the key is the receiver's to choose, the NIC's to
// check).
TEST(HostileReceiver, ACreditWithAnotherKeyThanTheRingsIsRefused) {
    RogueReceiver r;
    r.send_frame();
    r.rogue.credits({{0, 1}}, r.ring.rkey() + 1);
    EXPECT_HAS(refusal([&] { r.tx->progress(); }),
               fmt::format("credit for slot 0 carries rkey {:#x}, but its slots have no memory windows: every "
                           "credit must carry their rkey {:#x}",
                           r.ring.rkey() + 1, r.ring.rkey()));
}

TEST(HostileReceiver, AControlMessageOnlySendersSendIsRefused) {
    RogueReceiver r;
    r.rogue.control(wire::Control::kKeepalive);
    EXPECT_HAS(refusal([&] { r.tx->progress(); }),
               "refused the receiver at harness end 0: the receiver sent control message kind 2: only senders send it");
}

TEST(HostileReceiver, AMessageWithoutAnImmediateIsRefused) {
    RogueReceiver r;
    std::vector<std::byte> credit(wire::kCreditSize);
    r.rogue.send(credit, std::nullopt);
    EXPECT_HAS(refusal([&] { r.tx->progress(); }),
               "refused the receiver at harness end 0: the receiver sent a message without an immediate (8 bytes)");
}

TEST(HostileReceiver, AMessageLongerThanTheReceivesIsRefused) {
    RogueReceiver r;
    std::vector<std::byte> big(4096);
    r.rogue.send(big, wire::encode(wire::Control::kCredits));
    const std::string why = refusal([&] { r.tx->progress(); });
    EXPECT_HAS(why, "refused the receiver at harness end 0: the receiver sent a message longer than the 2048-byte "
                    "receive buffers");
}

TEST(HostileReceiver, ARingAdvertWithReservedBitsIsRefusedByName) {
    RogueReceiver r;
    r.tx->begin_format(r.format(2 * kSlot));
    wire::RingAdvertBytes keep = wire::encode(wire::RingAdvert{4, 3 * kSlot, r.bigger.addr(), r.bigger.rkey(), false});
    keep[29] = std::byte{1};
    r.rogue.control(wire::Control::kRing, keep);
    EXPECT_HAS(refusal([&] { r.tx->format_settled(); }),
               "refused the receiver at harness end 0: ring advert has reserved field reserved@29");
}

// ---- a hostile sender against a genuine FrameReceiver --------------------

struct RogueSender {
    explicit RogueSender(std::uint32_t slots = 8, bool windows = true) {
        RingConfig c;
        c.slots = slots;
        c.slot_size = kSlot;
        c.memory_windows = windows;
        rx = std::make_unique<FrameReceiver>(fabric.end(0), c);
        ring = rx->ring_advert();
    }
    MemoryFabric fabric;
    std::unique_ptr<FrameReceiver> rx; // end 0
    RawEnd rogue{fabric.end(1)};
    wire::RingAdvert ring;
    static wire::SlotHeader numbered(std::uint64_t sequence) {
        wire::SlotHeader h;
        h.sequence = sequence;
        return h;
    }
};

TEST(HostileSender, FrameNumbersThatFallAreRefused) {
    RogueSender s;
    s.rogue.frame(s.ring, {0, 0}, RogueSender::numbered(5));
    s.rogue.frame(s.ring, {1, 0}, RogueSender::numbered(3));
    EXPECT_EQ(s.rx->next(1s)->header.sequence, 5u);
    const std::string why = refusal([&] { s.rx->next(1s); });
    EXPECT_HAS(why, "receiver: refused the sender at harness end 1: ");
    EXPECT_HAS(why, "slot 1 holds frame 3 of flow 0, but frame 5 came already: frame numbers must rise");
}

TEST(HostileSender, AFrameNumberRepeatedIsRefused) {
    RogueSender s;
    s.rogue.frame(s.ring, {0, 0}, RogueSender::numbered(0));
    s.rogue.frame(s.ring, {1, 0}, RogueSender::numbered(0));
    s.rx->next(1s);
    EXPECT_HAS(refusal([&] { s.rx->next(1s); }), "frame numbers must rise");
}

TEST(HostileSender, GapsInFrameNumbersAreFine) { // the live policy's drops
    RogueSender s;
    s.rogue.frame(s.ring, {0, 0}, RogueSender::numbered(0));
    s.rogue.frame(s.ring, {1, 0}, RogueSender::numbered(7));
    EXPECT_EQ(s.rx->next(1s)->header.sequence, 0u);
    EXPECT_EQ(s.rx->next(1s)->header.sequence, 7u);
}

// A sender that guesses the next generation and writes into a slot the
// consumer still holds. With memory windows (the default) the NIC refuses
// the write: the slot's window was invalidated before the frame was handed
// out, nothing lands and the consumer's frame is unchanged. The writer's QP
// goes to the error state (as on rxe, only it sees the error), and the
// receiver learns of it as the hang-up that follows.
TEST(HostileSender, AWriteIntoAHeldSlotIsRefusedByTheNic) {
    RogueSender s;
    ASSERT_TRUE(s.rx->memory_windows());
    s.rogue.frame(s.ring, {0, 0}, RogueSender::numbered(0), 16, {}, {}, std::byte{0x11});
    const auto f = s.rx->next(1s);
    ASSERT_TRUE(f);
    EXPECT_EQ(s.rogue.last_status(), IBV_WC_SUCCESS);
    const std::vector<std::byte> before(f->payload.begin(), f->payload.end());
    // No credit: the consumer holds slot 0. The key is the one slot 0's
    // frame was written with.
    s.rogue.frame(s.ring, {0, 1}, RogueSender::numbered(1), 16, {}, {}, std::byte{0x22});
    EXPECT_EQ(s.rogue.last_status(), IBV_WC_REM_ACCESS_ERR);
    EXPECT_TRUE(std::equal(before.begin(), before.end(), f->payload.begin(), f->payload.end()));
    EXPECT_EQ(f->payload[0], std::byte{0x11});
    EXPECT_EQ(f->header.sequence, 0u);
    // The receiver's QP failed on the refused write (as rxe's does, with no
    // completion but a flush): the receiver names the sender and the cause,
    // before the sender hangs up.
    EXPECT_HAS(refusal([&] { s.rx->next(1s); }),
               "refused the sender at harness end 1: the NIC refused a write (or read) of the sender's outside its "
               "credits, and nothing of it landed; it held no credit for slot 0 (its frame is with the consumer)");
    EXPECT_EQ(f->payload[0], std::byte{0x11});
}

// A window covers its own slot only: slot 1's key does not reach slot 0.
TEST(HostileSender, AWindowKeyReachesOnlyItsSlot) {
    RogueSender s;
    s.rogue.frame(s.ring, {0, 0}, RogueSender::numbered(0), 16, {}, {}, std::byte{0x11});
    const auto f = s.rx->next(1s);
    ASSERT_TRUE(f);
    s.rogue.frame(s.ring, {0, 1}, RogueSender::numbered(1), 16, {}, s.ring.first_rkey(1), std::byte{0x22});
    EXPECT_EQ(s.rogue.last_status(), IBV_WC_REM_ACCESS_ERR);
    EXPECT_EQ(f->payload[0], std::byte{0x11});
}

// Without windows (--no-memory-windows) the ring is one REMOTE_WRITE region:
// the write lands, and is refused only when its completion arrives.
TEST(HostileSender, WithoutWindowsAWriteIntoAHeldSlotLandsAndIsRefused) {
    RogueSender s(8, false);
    ASSERT_FALSE(s.rx->memory_windows());
    EXPECT_FALSE(s.ring.windows());
    s.rogue.frame(s.ring, {0, 0}, RogueSender::numbered(0), 16, {}, {}, std::byte{0x11});
    const auto f = s.rx->next(1s);
    ASSERT_TRUE(f);
    s.rogue.frame(s.ring, {0, 1}, RogueSender::numbered(1), 16, {}, {}, std::byte{0x22}); // no credit
    EXPECT_EQ(s.rogue.last_status(), IBV_WC_SUCCESS);
    EXPECT_HAS(refusal([&] { s.rx->next(1s); }),
               "refused the sender at harness end 1: frame written into slot 0 while the consumer still holds it");
    EXPECT_EQ(f->payload[0], std::byte{0x22}); // the gap windows close
}

// A device without type 2 windows: the receiver falls back to one region,
// with one warning that names the device and the option.
TEST(HostileSender, ADeviceWithoutWindowsFallsBackWithOneWarning) {
    MemoryFabric fabric;
    fabric.without_windows();
    std::vector<std::string> warnings;
    RingConfig c;
    c.slots = 4;
    c.slot_size = kSlot;
    c.memory_windows = true;
    c.warn = [&](const std::string& w) { warnings.push_back(w); };
    FrameReceiver rx(fabric.end(0), c);
    EXPECT_FALSE(rx.memory_windows());
    EXPECT_FALSE(rx.ring_advert().windows());
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_HAS(warnings[0], "RDMA device harness has no type 2 memory windows");
    EXPECT_HAS(warnings[0], "--no-memory-windows");
    EXPECT_HAS(warnings[0], "memory-windows=false");
}

TEST(HostileSender, AFormatAnnouncedTwiceIsRefused) {
    RogueSender s;
    wire::StreamFormat f;
    f.id = 4;
    f.max_frame_size = 100;
    std::array<std::byte, wire::kControlPayloadMax> bytes{};
    const std::size_t n = wire::encode(f, bytes);
    s.rogue.control(wire::Control::kFormat, std::span(bytes).first(n));
    s.rogue.control(wire::Control::kFormat, std::span(bytes).first(n));
    EXPECT_HAS(refusal([&] { s.rx->next(1s); }),
               "refused the sender at harness end 1: the sender announced format 4 of flow 0 again");
}

TEST(HostileSender, AKeepaliveWithAPayloadIsRefused) {
    RogueSender s;
    std::vector<std::byte> junk(8);
    s.rogue.control(wire::Control::kKeepalive, junk);
    EXPECT_HAS(refusal([&] { s.rx->next(1s); }),
               "refused the sender at harness end 1: the sender's keepalive message carries 8 bytes");
}

TEST(HostileSender, CreditsFromASenderAreRefused) {
    RogueSender s;
    s.rogue.credits({{0, 1}}, 0);
    EXPECT_HAS(refusal([&] { s.rx->next(1s); }),
               "refused the sender at harness end 1: the sender sent a credits message: only receivers send those");
}

TEST(HostileSender, ALeavingMessageFromASenderIsRefused) {
    RogueSender s;
    s.rogue.control(wire::Control::kLeaving);
    EXPECT_HAS(refusal([&] { s.rx->next(1s); }),
               "refused the sender at harness end 1: the sender sent a leaving message: only receivers send it");
}

TEST(HostileReceiver, ALeavingMessageWithAPayloadIsRefused) {
    RogueReceiver r;
    std::vector<std::byte> junk(4);
    r.rogue.control(wire::Control::kLeaving, junk);
    EXPECT_HAS(refusal([&] { r.tx->progress(); }),
               "refused the receiver at harness end 0: the receiver's leaving message carries 4 bytes: it has none");
}

TEST(HostileSender, AMessageWithoutAnImmediateIsRefused) {
    RogueSender s;
    std::vector<std::byte> junk(8);
    s.rogue.send(junk, std::nullopt);
    EXPECT_HAS(refusal([&] { s.rx->next(1s); }),
               "refused the sender at harness end 1: the sender sent a message without an immediate");
}

TEST(HostileSender, AMessageLongerThanTheReceivesIsRefused) {
    RogueSender s;
    std::vector<std::byte> big(2048);
    s.rogue.send(big, wire::encode(wire::Control::kKeepalive));
    EXPECT_HAS(refusal([&] { s.rx->next(1s); }),
               "refused the sender at harness end 1: the sender sent a message longer than the 1024-byte receive "
               "buffers");
}

// ---- flows ---------------------------------------------------------------

wire::StreamFormat flow_format(std::uint8_t flow, std::uint16_t id) {
    wire::StreamFormat f;
    f.flow = flow;
    f.id = id;
    f.max_frame_size = 100;
    f.caps = "audio/x-test";
    return f;
}
void announce(RawEnd& rogue, const wire::StreamFormat& f) {
    std::array<std::byte, wire::kControlPayloadMax> bytes{};
    const std::size_t n = wire::encode(f, bytes);
    rogue.control(wire::Control::kFormat, std::span(bytes).first(n));
}

TEST(HostileSender, AFrameThatNamesAnotherFlowThanItsSlotsIsRefused) {
    RogueSender s;
    wire::SlotHeader h = RogueSender::numbered(0);
    h.flow = 1;
    s.rogue.frame(s.ring, {0, 0}, h);
    EXPECT_HAS(refusal([&] { s.rx->next(1s); }),
               "refused the sender at harness end 1: slot 0 is flow 0's, but its frame 0 says flow 1");
}

// A new flow's slots follow flow 0's, numbered on; its frames are numbered
// on their own; a frame in them that says flow 0 is refused.
TEST(HostileSender, ANewFlowsSlotsAreItsOwn) {
    RogueSender s(4, false);
    s.rogue.post_receives(4); // for the receiver's ring advert
    announce(s.rogue, flow_format(1, 1));
    s.rogue.frame(s.ring, {0, 0}, RogueSender::numbered(7));
    auto f = s.rx->next(1s); // takes the format (flow 1's slots registered), then hands out the frame
    ASSERT_TRUE(f);
    EXPECT_EQ(f->header.flow, 0);
    const wire::RingAdvert audio = s.rx->ring_advert(1); // what the receiver sent the rogue
    EXPECT_EQ(audio.flow, 1);
    EXPECT_EQ(audio.slot_base, 4u);
    EXPECT_EQ(audio.slot_count, RingConfig{}.flow_slots);
    wire::SlotHeader h = RogueSender::numbered(0); // below flow 0's 7: its own numbers
    h.flow = 1;
    h.format_id = 1;
    s.rogue.frame(audio, {4, 0}, h);
    f = s.rx->next(1s);
    ASSERT_TRUE(f);
    EXPECT_EQ(f->slot, 4u);
    EXPECT_EQ(f->header.flow, 1);
    EXPECT_EQ(f->header.sequence, 0u);
    ASSERT_NE(f->format, nullptr);
    EXPECT_EQ(f->format->caps, "audio/x-test");
    s.rogue.frame(audio, {5, 0}, RogueSender::numbered(8)); // flow 0's number, in flow 1's slot
    EXPECT_HAS(refusal([&] { s.rx->next(1s); }), "slot 5 is flow 1's, but its frame 8 says flow 0");
}

TEST(HostileSender, AFormatForAFlowPastTheProtocolsIsRefused) {
    RogueSender s;
    std::array<std::byte, wire::kControlPayloadMax> bytes{};
    const std::size_t n = wire::encode(flow_format(0, 1), bytes);
    bytes[6] = std::byte{15}; // the flow id
    s.rogue.control(wire::Control::kFormat, std::span(bytes).first(n));
    EXPECT_HAS(refusal([&] { s.rx->next(1s); }), "stream format 1 is for flow 15 (flows 0..14)");
}

TEST(HostileSender, AFlowPastTheReceiversLimitIsRefusedByName) {
    RogueSender s;
    announce(s.rogue, flow_format(9, 1)); // the receiver takes flows 0..7
    try {
        s.rx->next(1s);
        ADD_FAILURE() << "not refused";
    } catch (const UserError& e) {
        EXPECT_HAS(std::string(e.what()), "the sender at harness end 1 announced flow 9 (stream format 1): this "
                                          "receiver takes flows 0..7");
    }
}

TEST(HostileReceiver, ARingAdvertForAnotherFlowThanTheWaitingFormatsIsRefused) {
    RogueReceiver r;
    r.tx->begin_format(flow_format(1, 1)); // a new flow: its slots are due
    wire::RingAdvert a{16, kSlot, r.bigger.addr(), r.bigger.rkey(), false};
    a.flow = 2;
    a.slot_base = 4;
    wire::RingAdvertBytes keep;
    r.rogue.control(wire::Control::kRing, advert_bytes(a, keep));
    EXPECT_HAS(refusal([&] { r.tx->format_settled(); }),
               "the receiver sent a ring advert for flow 2, while flow 1's format waits for one");
}

TEST(HostileReceiver, ANewFlowsSlotsOverFlow0sAreRefused) {
    RogueReceiver r;
    r.tx->begin_format(flow_format(1, 1));
    wire::RingAdvert a{4, kSlot, r.bigger.addr(), r.bigger.rkey(), false};
    a.flow = 1; // slot_base 0: flow 0's slots
    wire::RingAdvertBytes keep;
    r.rogue.control(wire::Control::kRing, advert_bytes(a, keep));
    EXPECT_HAS(refusal([&] { r.tx->format_settled(); }),
               "the receiver gave flow 1 slots 0..3: a new flow's slots follow the others' (from slot 4)");
}

TEST(HostileSender, ReservedHeaderBytesAreRefusedByName) {
    RogueSender s;
    s.rogue.frame(s.ring, {0, 0}, RogueSender::numbered(0), 16, [](std::span<std::byte> b) { b[60] = std::byte{1}; });
    EXPECT_HAS(refusal([&] { s.rx->next(1s); }),
               "refused the sender at harness end 1: slot header has reserved field reserved@56 (offset 60)");
}

} // namespace
} // namespace rdmastream::harness
