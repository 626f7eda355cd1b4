// SPDX-License-Identifier: LGPL-2.1-or-later
// A stream over two paths, each a FrameSender and a FrameReceiver joined by
// a MemoryFabric of its own. PathReceiver (stream/path_receiver.hpp) with the
// senders driven by the test: each frame is handed out once, in order, from
// the first copy; the other copy goes back (its credit returns); a path that
// hangs up or goes silent is named once and the stream goes on over the
// other; the last path's failure is the stream's. Then the two-path sender
// (sender_two_paths.cpp) to it: a path cut mid-stream costs no frame,
// lossless (bit-exact, in order) or live (nothing missing at a rate the
// surviving path carries).
#include "stream_pair.hpp"

#include "memory/frame_memory_impl.hpp"
#include "rdmastream/error.hpp"
#include "stream/path_receiver.hpp"
#include "stream/sender_impl.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace rdmastream::harness {
namespace {

using namespace std::chrono_literals;

constexpr std::uint32_t kSlots = 4;
constexpr std::size_t kFrameBytes = 64;

// Two paths of one stream: path p is fabric[p], its receiver at end 0.
struct TwoPathStream {
    explicit TwoPathStream(PathReceiver::Options o = {}) {
        std::array<std::unique_ptr<FrameReceiver>, 2> rxs;
        for (std::size_t p = 0; p < 2; ++p) {
            RingConfig r = ring(kSlots);
            r.live = o.live;
            rxs[p] = std::make_unique<FrameReceiver>(fabric[p].end(0, r.poll_mode, nullptr), r);
            std::unique_ptr<Datapath> far = fabric[p].end(1);
            sender_end[p] = far.get();
            SenderOptions so;
            so.keepalive = 20ms; // where a test pumps a sender, its keepalives say it is alive
            tx[p] = std::make_unique<FrameSender>(std::move(far), rxs[p]->ring_advert(), so);
            memory[p].emplace(tx[p]->register_memory(kFrameBytes * 64, 0));
        }
        o.log = [this](const std::string& line) {
            const std::lock_guard lock(log_mutex);
            log.push_back(line);
        };
        rx = std::make_unique<PathReceiver>(std::move(rxs), o);
    }
    // Frame `n`'s bytes on path p, from that path's own memory (the two-path
    // sender writes one memory over both; each fabric here has its own).
    std::span<const std::byte> frame(std::size_t p, std::uint64_t n, std::byte salt = std::byte{0}) {
        std::span<std::byte> b = memory[p]->bytes().subspan((n % 64) * kFrameBytes, kFrameBytes);
        for (std::size_t i = 0; i < b.size(); ++i) b[i] = std::byte(static_cast<std::uint8_t>(n + i)) ^ salt;
        return b;
    }
    void send(std::size_t p, std::uint64_t n, std::byte salt = std::byte{0}) {
        FrameMeta meta;
        meta.pts = static_cast<std::int64_t>(n);
        ASSERT_EQ(tx[p]->send(frame(p, n, salt), memory[p]->lkey(), meta, n, 2s), n);
    }
    // Path p leaves frame n to the other path (the sender's skip, once the
    // other path delivered it).
    void skip(std::size_t p) { tx[p]->skip_frame(); }
    std::vector<std::string> lines() {
        const std::lock_guard lock(log_mutex);
        return log;
    }

    std::array<MemoryFabric, 2> fabric;
    std::array<std::unique_ptr<FrameSender>, 2> tx;
    std::array<Datapath*, 2> sender_end{}; // tx[p]'s: its hang-up
    std::array<std::optional<RegisteredRegion>, 2> memory;
    std::unique_ptr<PathReceiver> rx; // after the senders' fabrics; before nothing it points into
    std::mutex log_mutex;
    std::vector<std::string> log;
};

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// Frames until the end: their numbers, each payload checked against frame
// n's bytes, every slot released.
std::vector<std::uint64_t> receive_all(TwoPathStream& s, std::vector<std::uint16_t>* slots = nullptr) {
    std::vector<std::uint64_t> got;
    for (;;) {
        PathReceiver::Arrival a = s.rx->wait_frame(3s);
        if (a.kind == PathReceiver::Arrival::kEnd) return got;
        EXPECT_EQ(a.kind, PathReceiver::Arrival::kFrame);
        if (a.kind != PathReceiver::Arrival::kFrame) return got;
        const ReceivedFrame& f = a.frame;
        got.push_back(f.header.sequence);
        EXPECT_EQ(f.header.pts, static_cast<std::int64_t>(f.header.sequence));
        EXPECT_EQ(f.payload.size(), kFrameBytes);
        for (std::size_t i = 0; i < f.payload.size(); ++i) {
            if (f.payload[i] != std::byte(static_cast<std::uint8_t>(f.header.sequence + i))) {
                ADD_FAILURE() << "frame " << f.header.sequence << " byte " << i;
                break;
            }
        }
        if (slots) slots->push_back(f.slot);
        s.rx->release(f.slot);
    }
}

// Where `got` first leaves 0, 1, 2, ...: the numbers around it, for a failure's message.
std::string first_difference(const std::vector<std::uint64_t>& got) {
    std::size_t i = 0;
    while (i < got.size() && got[i] == i) ++i;
    if (i == got.size()) return "none";
    std::string around;
    for (std::size_t k = i > 3 ? i - 3 : 0; k < std::min(got.size(), i + 4); ++k) around += std::to_string(got[k]) + " ";
    return "at index " + std::to_string(i) + " of " + std::to_string(got.size()) + ": " + around;
}

std::vector<std::uint64_t> up_to(std::uint64_t n) {
    std::vector<std::uint64_t> v(n);
    for (std::uint64_t i = 0; i < n; ++i) v[i] = i;
    return v;
}

// Every frame on both paths, or on one of them (the other skipping it, as
// the sender skips what a path owes once the other delivered it): each
// handed out once and in order, from whichever copy came first, the
// other's slot given back so neither path runs out of credits.
TEST(TwoPaths, ReceiverHandsEachFrameOutOnceInOrder) {
    TwoPathStream s;
    constexpr std::uint64_t kFrames = 60;
    std::thread senders([&] {
        for (std::uint64_t n = 0; n < kFrames; ++n) {
            switch (n % 5) {
            case 0: s.send(0, n); s.send(1, n); break; // A first
            case 1: s.send(1, n); s.send(0, n); break; // B first
            case 2: s.send(0, n); s.skip(1); break;    // A only
            case 3: s.skip(0); s.send(1, n); break;    // B only
            default: s.send(0, n); s.send(1, n); break;
            }
        }
        s.tx[0]->finish(2s);
        s.tx[1]->finish(2s);
    });
    std::vector<std::uint16_t> slots;
    const std::vector<std::uint64_t> got = receive_all(s, &slots);
    senders.join();
    EXPECT_EQ(got, up_to(kFrames));
    const auto a = s.rx->counters(0).merge;
    const auto b = s.rx->counters(1).merge;
    EXPECT_EQ(a.first + b.first, kFrames);
    EXPECT_EQ(a.duplicates + b.duplicates, kFrames / 5 * 3); // the frames sent on both
    EXPECT_EQ(a.missing, kFrames / 5);                        // the frames B alone brought
    EXPECT_EQ(b.missing, kFrames / 5);
    // Path B's frames are numbered in its own range, after path A's two.
    EXPECT_TRUE(std::any_of(slots.begin(), slots.end(), [&](auto x) { return x >= 2 * s.rx->slot_base(); }));
    EXPECT_TRUE(std::any_of(slots.begin(), slots.end(), [&](auto x) { return x < s.rx->slot_base(); }));
    EXPECT_TRUE(std::all_of(slots.begin(), slots.end(), [&](auto x) { return x < s.rx->slot_numbers(); }));
    EXPECT_EQ(s.rx->counters(0).copies_differ + s.rx->counters(1).copies_differ, 0u);
    EXPECT_EQ(s.rx->state(), ReceiverState::kEnded);
    EXPECT_EQ(s.rx->stats().frames, kFrames);
    EXPECT_TRUE(s.lines().empty());
}

// Path B hangs up mid-stream (its link, its NIC): named once, and path A
// carries the rest; nothing missing, nothing twice.
TEST(TwoPaths, ReceiverGoesOnOverAPathWhenTheOtherHangsUp) {
    TwoPathStream s;
    constexpr std::uint64_t kFrames = 40;
    std::thread senders([&] {
        for (std::uint64_t n = 0; n < kFrames; ++n) {
            s.send(0, n);
            if (n < 10) s.send(1, n);
            if (n == 10) s.sender_end[1]->disconnect();
        }
        s.tx[0]->finish(2s);
    });
    const std::vector<std::uint64_t> got = receive_all(s);
    senders.join();
    EXPECT_EQ(got, up_to(kFrames));
    EXPECT_FALSE(s.rx->up(1));
    EXPECT_EQ(s.rx->counters(1).downs, 1u);
    const auto lines = s.lines();
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_TRUE(contains(lines[0], "path B (")) << lines[0];
    EXPECT_TRUE(contains(lines[0], "lost: ")) << lines[0];
    EXPECT_TRUE(contains(lines[0], "; streaming on path A")) << lines[0];
}

// A path that goes silent (no frame, no keepalive) while a frame waits for
// it is lost after path_silence, not after the caller's idle timeout.
TEST(TwoPaths, ReceiverLosesASilentPathAfterItsSilence) {
    PathReceiver::Options o;
    o.path_silence = 200ms;
    TwoPathStream s(o);
    s.send(0, 0);
    s.send(1, 0);
    s.skip(0);     // A leaves frame 1 to B...
    s.send(0, 2);  // ...and goes on; B never sends 1 (cut)
    std::atomic<bool> done{false};
    std::thread keepalives([&] { // A is alive: its sender sends keepalives
        while (!done) {
            s.tx[0]->progress();
            std::this_thread::sleep_for(5ms);
        }
    });
    const auto start = std::chrono::steady_clock::now();
    PathReceiver::Arrival a = s.rx->wait_frame(10s);
    ASSERT_EQ(a.kind, PathReceiver::Arrival::kFrame);
    EXPECT_EQ(a.frame.header.sequence, 0u);
    s.rx->release(a.frame.slot);
    a = s.rx->wait_frame(10s); // waits for B, loses it, then 1 is a gap
    ASSERT_EQ(a.kind, PathReceiver::Arrival::kFrame);
    EXPECT_EQ(a.frame.header.sequence, 2u);
    const auto waited = std::chrono::steady_clock::now() - start;
    done = true;
    keepalives.join();
    EXPECT_GE(waited, 150ms);
    EXPECT_LT(waited, 5s);
    EXPECT_EQ(s.rx->stats().drops, 1u);
    const auto lines = s.lines();
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_TRUE(contains(lines[0], "no frame and no keepalive for 200 ms")) << lines[0];
}

// The last path's failure is the stream's, thrown as one path's is.
TEST(TwoPaths, ReceiverFailsWhenTheLastPathGoes) {
    TwoPathStream s;
    s.send(0, 0);
    s.send(1, 0);
    s.sender_end[1]->disconnect();
    PathReceiver::Arrival a = s.rx->wait_frame(2s);
    ASSERT_EQ(a.kind, PathReceiver::Arrival::kFrame);
    s.rx->release(a.frame.slot);
    s.sender_end[0]->disconnect();
    EXPECT_THROW(
        {
            for (;;) {
                a = s.rx->wait_frame(2s);
                if (a.kind == PathReceiver::Arrival::kFrame) s.rx->release(a.frame.slot);
            }
        },
        ConnectionError);
    EXPECT_EQ(s.rx->state(), ReceiverState::kFailed);
}

// Two copies that differ: the first is handed out, the difference counted
// and logged once.
TEST(TwoPaths, ReceiverSaysWhenTwoCopiesDiffer) {
    TwoPathStream s;
    std::thread senders([&] {
        for (std::uint64_t n = 0; n < 6; ++n) {
            s.send(0, n);
            s.send(1, n, n >= 3 ? std::byte{0x40} : std::byte{0}); // B's copies of 3..5 differ
        }
        s.tx[0]->finish(2s);
        s.tx[1]->finish(2s);
    });
    PathReceiver::Arrival a;
    std::vector<std::uint64_t> got;
    // Hold each frame until the next arrives, so its copy is compared byte by byte.
    std::optional<std::uint16_t> held;
    for (;;) {
        a = s.rx->wait_frame(3s);
        if (a.kind != PathReceiver::Arrival::kFrame) break;
        got.push_back(a.frame.header.sequence);
        if (held) s.rx->release(*held);
        held = a.frame.slot;
    }
    if (held) s.rx->release(*held);
    senders.join();
    EXPECT_EQ(got, up_to(6));
    // Whichever copy came second is the one counted, on its path.
    std::uint64_t differ = 0, unchecked = 0;
    for (std::size_t p = 0; p < 2; ++p) {
        differ += s.rx->counters(p).copies_differ;
        unchecked += s.rx->counters(p).copies_unchecked;
    }
    EXPECT_EQ(differ + unchecked, 3u);
    EXPECT_GE(differ, 1u);
    const auto lines = s.lines();
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_TRUE(contains(lines[0], "came on paths A and B")) << lines[0];
    EXPECT_TRUE(contains(lines[0], "differ")) << lines[0];
}

// Live: a frame no path brought within the skew is a gap; a frame the
// sender dropped on both paths is a gap at once.
TEST(TwoPaths, LiveReceiverGivesUpOnAFrameAfterTheSkew) {
    PathReceiver::Options o;
    o.live = true;
    o.skew = 30ms;
    TwoPathStream s(o);
    s.send(0, 0);
    s.skip(0);
    s.send(0, 2); // 1 may still come on B, which is up and silent
    s.skip(1);
    s.skip(1);
    s.skip(1);
    std::vector<std::uint64_t> got;
    for (int i = 0; i < 2; ++i) {
        PathReceiver::Arrival a = s.rx->wait_frame(2s);
        ASSERT_EQ(a.kind, PathReceiver::Arrival::kFrame);
        got.push_back(a.frame.header.sequence);
        s.rx->release(a.frame.slot);
    }
    EXPECT_EQ(got, (std::vector<std::uint64_t>{0, 2}));
    EXPECT_EQ(s.rx->stats().drops, 1u);
    EXPECT_TRUE(s.rx->up(1)); // silence within path_silence is no loss
}

// One path ends the stream and the other never does: the stream ends
// after end_grace, the straggler named.
TEST(TwoPaths, ReceiverEndsAfterTheGraceWhenOnePathNeverEnds) {
    PathReceiver::Options o;
    o.end_grace = 100ms;
    TwoPathStream s(o);
    std::thread senders([&] {
        s.send(0, 0);
        s.send(1, 0);
        s.tx[0]->finish(2s);
    });
    const std::vector<std::uint64_t> got = receive_all(s);
    senders.join();
    EXPECT_EQ(got, up_to(1));
    EXPECT_EQ(s.rx->state(), ReceiverState::kEnded);
    const auto lines = s.lines();
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_TRUE(contains(lines[0], "did not end the stream within 100 ms")) << lines[0];
}


// The two-path sender to the two-path receiver, over two fabrics.
struct TwoPathLink {
    static constexpr std::size_t kBuffers = 4;

    TwoPathLink(Policy stream_policy, PathReceiver::Options ro) : policy(stream_policy) {
        std::array<std::unique_ptr<FrameReceiver>, 2> rxs;
        std::array<std::unique_ptr<FrameSender>, 2> txs;
        for (std::size_t p = 0; p < 2; ++p) {
            rxs[p] = std::make_unique<FrameReceiver>(fabric[p].end(0, PollMode::kEvent, waker.get()), ring_config());
            txs[p] = std::make_unique<FrameSender>(fabric[p].end(1), rxs[p]->ring_advert(), sender_options());
        }
        // One mapping, registered on both paths' devices (device p: path p).
        auto registrar = [](FrameSender& path) {
            return [&path](std::span<std::byte> pages, std::size_t locked) {
                return path.register_pages(pages, locked, 0);
            };
        };
        domain = std::make_shared<MemoryDomain::Impl>(registrar(*txs[0]));
        domain->add_device(registrar(*txs[1]));
        memory = domain->allocate(domain, kFrameBytes * kBuffers);
        SenderConfig c;
        c.policy = policy;
        c.on_done = [this](std::uint64_t, FrameFate fate) {
            ++(fate == FrameFate::kDelivered ? delivered : dropped);
        };
        c.log = [this](const std::string& line) { note("sender: " + line); };
        tx = two_path_sender(std::move(txs), c);
        ro.live = policy == Policy::kLive;
        ro.waker = waker.get();
        ro.log = [this](const std::string& line) { note("receiver: " + line); };
        rx = std::make_unique<PathReceiver>(std::move(rxs), ro);
    }
    RingConfig ring_config() const {
        RingConfig r = ring(kSlots);
        r.live = policy == Policy::kLive;
        r.waker = waker;
        return r;
    }
    SenderOptions sender_options() const {
        SenderOptions so;
        so.policy = policy;
        so.keepalive = 20ms;
        return so;
    }
    // Path p back over a new wire (as its dialler and the listener's join
    // screen will bring it): a new fabric, the memory registered on its
    // device, the receiver's end handed to the receiving thread through
    // `joining` and a wake (it attaches it there), the sender's attached here.
    void rejoin(std::size_t p) {
        MemoryFabric& wire = spare.emplace_back();
        auto rx_end = std::make_unique<FrameReceiver>(wire.end(0, PollMode::kEvent, waker.get()), ring_config());
        auto tx_end = std::make_unique<FrameSender>(wire.end(1), rx_end->ring_advert(), sender_options());
        FrameSender& path = *tx_end;
        const std::size_t device = domain->add_device([&path](std::span<std::byte> pages, std::size_t locked) {
            return path.register_pages(pages, locked, 0);
        });
        {
            const std::lock_guard lock(join_mutex);
            joining = std::move(rx_end);
            joining_path = p;
        }
        waker->wake();
        attach_path(*tx, p, std::move(tx_end), device);
    }
    // The receiving thread, woken: a path that came back.
    void take_join() {
        const std::lock_guard lock(join_mutex);
        if (joining) {
            ASSERT_TRUE(rx->attach(joining_path, std::move(joining)));
        }
    }
    void note(const std::string& line) {
        const std::lock_guard lock(log_mutex);
        log.push_back(line);
    }
    std::vector<std::string> lines() {
        const std::lock_guard lock(log_mutex);
        return log;
    }
    // Frame n, written into buffer n % kBuffers of the one mapping, sent.
    void send(std::uint64_t n) {
        std::span<std::byte> b = memory->pages.bytes().subspan((n % kBuffers) * kFrameBytes, kFrameBytes);
        for (std::size_t i = 0; i < b.size(); ++i) b[i] = std::byte(static_cast<std::uint8_t>(n + i));
        FrameMeta meta;
        meta.pts = static_cast<std::int64_t>(n);
        ASSERT_EQ(tx->send(b, *memory, meta, n, 5s), n);
    }

    Policy policy;
    std::shared_ptr<Waker> waker = std::make_shared<Waker>();
    std::array<MemoryFabric, 2> fabric;
    std::deque<MemoryFabric> spare; // the wires of paths back
    std::shared_ptr<MemoryDomain::Impl> domain;
    std::unique_ptr<FrameMemory::Impl> memory; // outlives the sender: the NIC lets go first
    std::unique_ptr<Sender::Impl> tx;
    std::unique_ptr<PathReceiver> rx;
    std::atomic<std::uint64_t> delivered{0}, dropped{0};
    std::mutex join_mutex;
    std::unique_ptr<FrameReceiver> joining;
    std::size_t joining_path = 0;
    std::mutex log_mutex;
    std::vector<std::string> log;
};

// Receives into `got` until the end (payloads checked), counting into `seen`.
std::thread receiver_thread(TwoPathLink& link, std::vector<std::uint64_t>& got, std::atomic<std::uint64_t>& seen) {
    return std::thread([&] {
        for (;;) {
            PathReceiver::Arrival a = link.rx->wait_frame(5s);
            if (a.kind == PathReceiver::Arrival::kWoken) {
                link.take_join();
                continue;
            }
            if (a.kind != PathReceiver::Arrival::kFrame) return;
            const ReceivedFrame& f = a.frame;
            got.push_back(f.header.sequence);
            for (std::size_t i = 0; i < f.payload.size(); ++i) {
                if (f.payload[i] != std::byte(static_cast<std::uint8_t>(f.header.sequence + i))) {
                    ADD_FAILURE() << "frame " << f.header.sequence << " byte " << i;
                    break;
                }
            }
            link.rx->release(f.slot);
            ++seen;
        }
    });
}

bool has_line(const std::vector<std::string>& lines, const std::string& a, const std::string& b) {
    return std::any_of(lines.begin(), lines.end(), [&](const std::string& l) { return contains(l, a) && contains(l, b); });
}

// Streams nothing new until a line with both parts is logged (the sender
// kept alive meanwhile), at most 5 s: the wait for an end to notice a cut.
void await_line(TwoPathLink& link, const std::string& a, const std::string& b) {
    for (auto until = std::chrono::steady_clock::now() + 5s; !has_line(link.lines(), a, b);) {
        ASSERT_LT(std::chrono::steady_clock::now(), until) << "never logged: " << a << "..." << b;
        link.tx->progress();
        std::this_thread::sleep_for(1ms);
    }
}

// Streams frames 0..frames-1 lossless to the receiving thread, calling
// `at(n)` before frame n is sent (the faults), each frame's buffer reused
// once the transport is done with it; then ends the stream. What arrived.
std::vector<std::uint64_t> stream_lossless(TwoPathLink& link, std::uint64_t frames,
                                           const std::function<void(std::uint64_t)>& at) {
    std::vector<std::uint64_t> got;
    std::atomic<std::uint64_t> seen{0};
    std::thread receiver = receiver_thread(link, got, seen);
    for (std::uint64_t n = 0; n < frames && !::testing::Test::HasFatalFailure(); ++n) {
        if (n >= TwoPathLink::kBuffers) {
            EXPECT_TRUE(link.tx->wait_done(n - TwoPathLink::kBuffers, 5s, 0));
        }
        at(n);
        link.send(n);
    }
    link.tx->finish(5s);
    receiver.join();
    return got;
}

// Lossless: path B's wire cut mid-stream; every frame arrives, bit-exact and
// in order, each end names B's loss once, and every frame's memory comes
// back delivered.
TEST(TwoPaths, LosslessStreamLosesNoFrameWhenAPathIsCut) {
    PathReceiver::Options ro;
    ro.path_silence = 300ms;
    ro.end_grace = 100ms; // a cut path the receiver had not noticed by the end
    TwoPathLink link(Policy::kLossless, ro);
    constexpr std::uint64_t kFrames = 200;
    const std::vector<std::uint64_t> got = stream_lossless(link, kFrames, [&](std::uint64_t n) {
        if (n == 70) link.fabric[1].cut();
        if (n == 80) await_line(link, "receiver: path B", "lost");
    });
    EXPECT_EQ(got, up_to(kFrames));
    EXPECT_EQ(link.delivered, kFrames);
    EXPECT_EQ(link.dropped, 0u);
    EXPECT_EQ(link.tx->state(), SenderState::kEnded);
    EXPECT_EQ(link.rx->state(), ReceiverState::kEnded);
    EXPECT_FALSE(link.rx->up(1));
    const auto lines = link.lines();
    EXPECT_TRUE(has_line(lines, "sender: path B (", "; streaming on path A")) << ::testing::PrintToString(lines);
    EXPECT_TRUE(has_line(lines, "receiver: path B (", "; streaming on path A")) << ::testing::PrintToString(lines);
    EXPECT_EQ(lines.size(), 2u) << ::testing::PrintToString(lines);
}

// Lossless: path B's wire goes silent, as a dead link is while a NIC's RC
// retries run (here they never end), while path A delivers what was sent
// after B's oldest write. B is not waited for (the caller would be out of
// buffers, stream_lossless's wait_done throwing after 5 s): once its oldest
// write is out past its usual delivery time (the 100 ms floor here) it is
// lost, named once at the sender, and every frame arrives, in order. Silent
// from the first frame: B then surely holds the frames its first credits
// let it post (silent mid-stream, what it holds depends on how far the
// receiver's credits on it lag, which the threads' scheduling decides).
TEST(TwoPaths, APathGoneSilentIsLostOnceTheOtherDeliversPastIt) {
    PathReceiver::Options ro;
    ro.path_silence = 300ms;
    ro.end_grace = 100ms;
    TwoPathLink link(Policy::kLossless, ro);
    constexpr std::uint64_t kFrames = 100;
    const auto start = std::chrono::steady_clock::now();
    const std::vector<std::uint64_t> got = stream_lossless(link, kFrames, [&](std::uint64_t n) {
        if (n == 0) link.fabric[1].hang();
    });
    EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
    EXPECT_EQ(got, up_to(kFrames));
    EXPECT_EQ(link.delivered, kFrames);
    EXPECT_EQ(link.dropped, 0u);
    const auto lines = link.lines();
    EXPECT_TRUE(has_line(lines, "sender: path B (", "lost: sender: no acknowledgement for"))
        << ::testing::PrintToString(lines);
    EXPECT_TRUE(has_line(lines, "while path A delivers what was sent after", "; streaming on path A"))
        << ::testing::PrintToString(lines);
}

// The same with path A cut: the founding path is no different.
TEST(TwoPaths, LosslessStreamLosesNoFrameWhenTheFirstPathIsCut) {
    PathReceiver::Options ro;
    ro.path_silence = 300ms;
    ro.end_grace = 100ms; // a cut path the receiver had not noticed by the end
    TwoPathLink link(Policy::kLossless, ro);
    constexpr std::uint64_t kFrames = 120;
    const std::vector<std::uint64_t> got = stream_lossless(link, kFrames, [&](std::uint64_t n) {
        if (n == 33) link.fabric[0].cut();
    });
    EXPECT_EQ(got, up_to(kFrames));
    EXPECT_EQ(link.delivered, kFrames);
    EXPECT_FALSE(link.rx->up(0));
    EXPECT_TRUE(has_line(link.lines(), "sender: path A (", "; streaming on path B"));
}

// What a facility's stream lives through (the "done when", in
// memory): path B cut, B back, then path A cut, lossless: every frame,
// bit-exact and in order, and each end names each loss and the return.
TEST(TwoPaths, LosslessStreamLivesThroughBCutBBackThenACut) {
    PathReceiver::Options ro;
    ro.path_silence = 300ms;
    ro.end_grace = 100ms; // a cut path the receiver had not noticed by the end
    TwoPathLink link(Policy::kLossless, ro);
    constexpr std::uint64_t kFrames = 300;
    const std::vector<std::uint64_t> got = stream_lossless(link, kFrames, [&](std::uint64_t n) {
        if (n == 60) link.fabric[1].cut();
        if (n == 140) { // both ends noticed, then the path comes back
            await_line(link, "receiver: path B", "lost");
            await_line(link, "sender: path B", "lost");
            link.rejoin(1);
        }
        if (n == 220) link.fabric[0].cut();
        if (n == 230) await_line(link, "receiver: path A", "lost"); // streaming on B until then
    });
    EXPECT_EQ(got, up_to(kFrames)) << first_difference(got) << "\n" << ::testing::PrintToString(link.lines());
    EXPECT_EQ(link.delivered, kFrames);
    EXPECT_EQ(link.dropped, 0u);
    EXPECT_TRUE(link.rx->up(1));
    EXPECT_FALSE(link.rx->up(0));
    EXPECT_EQ(link.rx->counters(1).ups, 1u);
    EXPECT_GT(link.rx->counters(1).merge.first, 0u); // frames came first on the path back
    const auto lines = link.lines();
    for (const char* side : {"sender: ", "receiver: "}) {
        EXPECT_TRUE(has_line(lines, std::string(side) + "path B (", "lost:")) << ::testing::PrintToString(lines);
        EXPECT_TRUE(has_line(lines, std::string(side) + "path B (", "back")) << ::testing::PrintToString(lines);
        EXPECT_TRUE(has_line(lines, std::string(side) + "path A (", "; streaming on path B"))
            << side << ::testing::PrintToString(lines);
    }
}

// Live, at a rate the surviving path carries (each frame sent once the
// receiver has the one before last): a cut costs nothing either.
TEST(TwoPaths, LiveStreamMissesNoFrameWhenAPathIsCut) {
    PathReceiver::Options ro;
    ro.path_silence = 300ms;
    ro.end_grace = 100ms; // a cut path the receiver had not noticed by the end
    TwoPathLink link(Policy::kLive, ro);
    constexpr std::uint64_t kFrames = 150;
    std::vector<std::uint64_t> got;
    std::atomic<std::uint64_t> seen{0};
    std::thread receiver = receiver_thread(link, got, seen);
    for (std::uint64_t n = 0; n < kFrames; ++n) {
        for (auto until = std::chrono::steady_clock::now() + 5s; n >= 2 && seen + 2 < n + 1;) {
            link.tx->progress();
            ASSERT_LT(std::chrono::steady_clock::now(), until) << "frame " << n - 2 << " never came";
            std::this_thread::sleep_for(100us);
        }
        if (n >= TwoPathLink::kBuffers) {
            ASSERT_TRUE(link.tx->wait_done(n - TwoPathLink::kBuffers, 5s, 0));
        }
        if (n == 50) link.fabric[1].cut();
        link.send(n);
    }
    link.tx->finish(5s);
    receiver.join();
    EXPECT_EQ(got, up_to(kFrames));
    EXPECT_EQ(link.dropped, 0u);
    EXPECT_EQ(link.rx->stats().drops, 0u);
}

// Live, a receiver that takes nothing for a while: the frames no path could
// post before a newer one came are drops, counted once. The sender's frames
// are the ones delivered and its drops the ones dropped, as its caller's
// on_done saw them (frames + drops: every number used).
TEST(TwoPaths, LiveFramesDroppedAfterTheyWereTakenCountAsDropsNotFrames) {
    PathReceiver::Options ro;
    TwoPathLink link(Policy::kLive, ro);
    constexpr std::uint64_t kFrames = 40, kUnread = 20;
    for (std::uint64_t n = 0; n < kUnread; ++n) { // the ring fills; then each frame is stale at the next
        if (n >= TwoPathLink::kBuffers) {
            ASSERT_TRUE(link.tx->wait_done(n - TwoPathLink::kBuffers, 5s, 0));
        }
        link.send(n);
    }
    std::vector<std::uint64_t> got;
    std::atomic<std::uint64_t> seen{0};
    std::thread receiver = receiver_thread(link, got, seen);
    for (std::uint64_t n = kUnread; n < kFrames; ++n) {
        ASSERT_TRUE(link.tx->wait_done(n - TwoPathLink::kBuffers, 5s, 0));
        link.send(n);
    }
    link.tx->finish(5s);
    receiver.join();
    const StreamStats s = link.tx->stats();
    EXPECT_GT(link.dropped, 0u);
    EXPECT_EQ(s.frames, link.delivered.load());
    EXPECT_EQ(s.drops, link.dropped.load());
    EXPECT_EQ(s.frames + s.drops, kFrames);
    EXPECT_EQ(got.size(), s.frames);
    EXPECT_EQ(s.bytes, s.frames * kFrameBytes);
}

} // namespace
} // namespace rdmastream::harness
