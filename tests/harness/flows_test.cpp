// SPDX-License-Identifier: LGPL-2.1-or-later
// Flows (a programme's video, audio, data) through a FrameSender and a
// FrameReceiver over the in-memory fabric: each flow announced by its own
// format gets its own slots, frame numbers and credits, so one flow's
// frames never wait for another's (a held video frame does not stop the
// sound, a video flow's slots grow while an audio frame is held); the
// receiver's limits count every flow.
#include "stream_pair.hpp"

#include "rdmastream/error.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace rdmastream::harness {
namespace {

using namespace std::chrono_literals;

wire::StreamFormat flow_test_format(std::uint8_t flow, std::uint16_t id, std::uint32_t max_frame, const char* caps) {
    wire::StreamFormat f;
    f.flow = flow;
    f.id = id;
    f.max_frame_size = max_frame;
    f.caps = caps;
    return f;
}
const wire::StreamFormat kVideo = flow_test_format(0, 1, 1024, "video/x-test");
const wire::StreamFormat kAudio = flow_test_format(1, 1, 256, "audio/x-test");

FrameMeta of_flow(std::uint8_t flow, std::int64_t pts) {
    FrameMeta m;
    m.flow = flow;
    m.pts = pts;
    return m;
}

struct Seen {
    std::uint8_t flow = 0;
    std::uint64_t sequence = 0;
    std::int64_t pts = 0;
    std::uint16_t slot = 0;
    std::string caps;
    std::byte first{};
};

TEST(FlowsStream, EachFlowHasItsFormatNumbersAndSlots) {
    auto p = connect_pair(ring(2), SenderOptions{});
    RegisteredRegion mem = p.tx->register_memory(2048, 0);
    std::vector<Seen> seen;
    std::thread rx([&] {
        while (auto f = p.rx->next(2s)) {
            ASSERT_NE(f->format, nullptr);
            seen.push_back({f->header.flow, f->header.sequence, f->header.pts, f->slot, f->format->caps,
                            f->payload.empty() ? std::byte{} : f->payload[0]});
            EXPECT_EQ(f->format->flow, f->header.flow);
            p.rx->release(f->slot);
        }
    });
    p.tx->set_format(kVideo, 2s);
    EXPECT_FALSE(p.tx->has_flow(1));
    p.tx->set_format(kAudio, 2s); // the receiver gives flow 1 its slots
    ASSERT_TRUE(p.tx->has_flow(1));
    EXPECT_EQ(p.tx->ring(1).slot_base, 2u); // after flow 0's two
    EXPECT_EQ(p.tx->ring(1).slot_count, RingConfig{}.flow_slots);
    EXPECT_EQ(p.tx->max_payload(1), 4096u - 64u); // 256 bytes and a header, in a slot rounded up to 4 KiB
    // Two audio frames per video frame, each flow numbered from 0.
    for (int v = 0; v < 5; ++v) {
        mem.bytes()[0] = std::byte{0x10};
        ASSERT_EQ(p.tx->send(mem.bytes().first(1000), mem.lkey(), of_flow(0, v * 40), 0, 1s), std::uint64_t(v));
        p.tx->wait_done(static_cast<std::uint64_t>(v), 1s, 0);
        for (int a = 0; a < 2; ++a) {
            mem.bytes()[1024] = std::byte{0x20};
            const auto n = p.tx->send(mem.bytes().subspan(1024, 200), mem.lkey(), of_flow(1, v * 40 + a * 20), 0, 1s);
            ASSERT_EQ(n, std::uint64_t(2 * v + a));
            p.tx->wait_done(*n, 1s, 1);
        }
    }
    p.tx->finish(2s);
    rx.join();
    ASSERT_EQ(seen.size(), 15u);
    std::uint64_t next[2] = {0, 0};
    for (const Seen& s : seen) {
        ASSERT_LT(s.flow, 2);
        EXPECT_EQ(s.sequence, next[s.flow]++) << "flow " << int(s.flow);
        EXPECT_EQ(s.caps, s.flow == 0 ? "video/x-test" : "audio/x-test");
        EXPECT_EQ(s.first, s.flow == 0 ? std::byte{0x10} : std::byte{0x20});
        if (s.flow == 0) {
            EXPECT_LT(s.slot, 2u);
        } else {
            EXPECT_GE(s.slot, 2u);
        }
    }
    EXPECT_EQ(next[0], 5u);
    EXPECT_EQ(next[1], 10u);
}

// Lossless, one video slot: the receiver holds the video frame, and the
// audio frames go on regardless; the next video frame waits for its own
// credit only.
TEST(FlowsStream, AHeldVideoFrameDoesNotHoldTheSound) {
    auto p = connect_pair(ring(1), SenderOptions{});
    RegisteredRegion mem = p.tx->register_memory(2048, 0);
    std::thread rx([&] {
        // The format messages are acted on as the receiver looks: until
        // the audio flow has its slots, nothing else arrives.
        auto video = p.rx->next(2s);
        ASSERT_TRUE(video);
        EXPECT_EQ(video->header.flow, 0);
        for (int a = 0; a < 20; ++a) { // more than the audio flow's 16 slots: their credits come back
            auto f = p.rx->next(2s);
            ASSERT_TRUE(f);
            EXPECT_EQ(f->header.flow, 1);
            EXPECT_EQ(f->header.sequence, std::uint64_t(a));
            p.rx->release(f->slot);
        }
        p.rx->release(video->slot); // only now
        while (auto f = p.rx->next(2s)) p.rx->release(f->slot);
    });
    p.tx->set_format(kVideo, 2s);
    p.tx->set_format(kAudio, 2s);
    p.tx->send(mem.bytes().first(1000), mem.lkey(), of_flow(0, 0), 0, 1s);
    // Lossless: each waits (1 s at most) for a credit of its own flow.
    for (int a = 0; a < 20; ++a) {
        p.tx->send(mem.bytes().subspan(1024, 100), mem.lkey(), of_flow(1, a), 0, 1s);
    }
    EXPECT_EQ(p.tx->credits_available(0), 0u); // the video frame is still held
    p.tx->send(mem.bytes().first(1000), mem.lkey(), of_flow(0, 1), 0, 2s); // waits for the release
    p.tx->finish(2s);
    rx.join();
}

// Flow 0's frames outgrow its slots while an audio frame is held: the
// receiver registers flow 0's slots anew, and waits for flow 0's credits
// only; the held audio frame's bytes stay as they were.
TEST(FlowsStream, OneFlowsSlotsGrowWhileAnotherFlowsFrameIsHeld) {
    auto p = connect_pair(ring(2), SenderOptions{});
    RegisteredRegion mem = p.tx->register_memory(3 * 4096, 0);
    std::thread rx([&] {
        auto audio = p.rx->next(2s);
        ASSERT_TRUE(audio);
        ASSERT_EQ(audio->header.flow, 1);
        const std::vector<std::byte> kept(audio->payload.begin(), audio->payload.end());
        auto big = p.rx->next(2s);
        ASSERT_TRUE(big);
        EXPECT_EQ(big->header.flow, 0);
        EXPECT_EQ(big->payload.size(), 8000u);
        EXPECT_TRUE(big->format_changed);
        EXPECT_EQ(std::vector<std::byte>(audio->payload.begin(), audio->payload.end()), kept);
        p.rx->release(big->slot);
        p.rx->release(audio->slot);
        EXPECT_FALSE(p.rx->next(2s));
    });
    p.tx->set_format(kVideo, 2s);
    p.tx->set_format(kAudio, 2s);
    std::memset(mem.bytes().data(), 0x5a, 100);
    p.tx->send(mem.bytes().first(100), mem.lkey(), of_flow(1, 0), 0, 1s);
    p.tx->set_format(flow_test_format(0, 2, 8000, "video/x-test,big"), 2s); // flow 0 grows; flow 1's credit is out
    EXPECT_GE(p.tx->max_payload(0), 8000u);
    std::memset(mem.bytes().data(), 0x66, 100); // the held audio frame was written already: this changes nothing there
    p.tx->send(mem.bytes().first(8000), mem.lkey(), of_flow(0, 0), 1, 1s);
    p.tx->finish(2s);
    rx.join();
}

// A frame of a flow never announced is the caller's mistake, named.
TEST(FlowsStream, AFrameOfAFlowWithoutAFormatIsRefusedAtSend) {
    auto p = connect_pair(ring(2), SenderOptions{});
    RegisteredRegion mem = p.tx->register_memory(1024, 0);
    try {
        p.tx->send(mem.bytes().first(10), mem.lkey(), of_flow(3, 0), 0, 1s);
        ADD_FAILURE() << "sent";
    } catch (const UserError& e) {
        EXPECT_NE(std::string(e.what()).find("flow 3, which has no slots: announce its format first"),
                  std::string::npos)
            << e.what();
    }
}

// The receiver's limits count every flow: a flow past max_flows, or whose
// slots would bring the ring past max_ring_bytes, is refused by name.
// The sender announces `format`; the receiver must refuse it (UserError
// containing `why`) and hang up, and the sender's set_format must fail.
void expect_refused(const RingConfig& c, const wire::StreamFormat& format, const std::string& why) {
    auto p = connect_pair(c, SenderOptions{});
    std::thread rx([&] {
        try {
            p.rx->next(2s);
            ADD_FAILURE() << "a frame or the end, not a refusal";
        } catch (const UserError& e) {
            EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
        }
        p.rx.reset(); // hangs up
    });
    EXPECT_ANY_THROW(p.tx->set_format(format, 2s));
    rx.join();
}

TEST(FlowsLimits, AFlowPastTheReceiversFlowLimitIsRefused) {
    RingConfig c = ring(2);
    c.max_flows = 2;
    expect_refused(c, flow_test_format(2, 1, 100, "audio/x-test"),
                   "announced flow 2 (stream format 1): this receiver takes flows 0..1: raise its flow limit "
                   "(ReceiverConfig::max_flows");
}

TEST(FlowsLimits, TheRingLimitCountsEveryFlow) {
    RingConfig c = ring(2); // 2 x 4160 bytes
    c.max_ring_bytes = 2 * kSlot + 8 * 4096; // room for 8 more 4 KiB slots, not the 16 a flow gets
    expect_refused(c, kAudio, "every flow's slots together, to 73856 bytes, above this receiver's ring limit of "
                              "41088 bytes");
}

} // namespace
} // namespace rdmastream::harness
