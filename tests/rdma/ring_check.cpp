// SPDX-License-Identifier: LGPL-2.1-or-later
// rdma-ring-check: the end-to-end RDMA check, and the smoke stream.
//
// receiver:  rdmastream::FrameReceiver; checks every frame on arrival: the
//            slot it landed in (against a model of the sender's credits),
//            sequence, size and every payload byte; releases frames in
//            order, or in reversed batches (--release-batch) to exercise
//            out-of-order credit return.
// sender:    rdmastream::FrameSender, writing deterministic frames from a
//            registered pool, zero-copy.
// rogue-sender: a hand-made sender (rogue_sender.cpp) that breaks the
//            protocol on purpose at frame 1 (--fault), to prove the
//            receiver catches and explains each violation.
// rogue-receiver: a hand-made receiver (rogue_receiver.cpp) that listens
//            and sends what no receiver should (--fault), to prove a
//            genuine sender refuses it by name.
#include "frame_pattern.hpp"
#include "rogue_receiver.hpp"
#include "rogue_sender.hpp"

#include "rdmastream/error.hpp"
#include "memory/frame_memory_impl.hpp"
#include "stream/fanout_sender.hpp"
#include "stream/frame_receiver.hpp"
#include "stream/frame_sender.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <optional>
#include <utility>
#include <thread>
#include <vector>

namespace rs = rdmastream;
namespace wire = rdmastream::wire;
namespace check = rdmastream::check;

namespace {

struct Options {
    std::string role;
    std::string addr;
    std::uint16_t port = rs::kDefaultPort;
    std::uint32_t slots = 8;
    std::uint32_t slot_size = 256 * 1024;
    std::uint64_t frames = 200;
    std::uint32_t min_payload = 1;
    std::uint32_t max_payload = 0; // 0: fill the slot
    std::uint32_t release_batch = 1;
    std::string fault = "none";
    double connect_timeout = 60;
    double idle_timeout = 20;
    double member_timeout = 5; // fan-out sender
    std::string stats_json;
    bool reverse = false; // the sender listens, the receiver dials
    std::string policy = "lossless";
    bool allow_drops = false;
    unsigned consume_delay_ms = 0;
    bool expect_drops = false;
    bool expect_credit_waits = false;
    std::uint32_t grow_to = 0;
    int expect_format_changes = -1;
    std::string poll = "event";
    std::string device;
    std::string key_file; // a pre-shared key both ends prove; empty: none
    unsigned receivers = 0; // > 0: fan-out to this many (the sender listens)
    double fps = 0;
    bool late_join = false;
    std::uint64_t rejoin_after = 0;
    bool memory_windows = false; // receiver: --memory-windows sets it
    bool hold_first = false;    // receiver: hold frame 0 until the end; check it after a refusal
    bool serve_next = false;    // receiver: after the first sender is refused, the listener serves the next
};

// FNV-1a over a frame's bytes: whether a held frame changed.
std::uint64_t checksum(std::span<const std::byte> bytes) {
    std::uint64_t h = 0xcbf29ce484222325ull;
    for (std::byte b : bytes) h = (h ^ static_cast<std::uint8_t>(b)) * 0x100000001b3ull;
    return h;
}

std::shared_ptr<const rs::PresharedKey> key(const Options& o) {
    if (o.key_file.empty()) return nullptr;
    return rs::PresharedKey::from_file(o.key_file, [](const std::string& w) { std::fprintf(stderr, "%s\n", w.c_str()); });
}

rs::PollMode poll_mode(const Options& o) { return o.poll == "busy" ? rs::PollMode::kBusy : rs::PollMode::kEvent; }

std::chrono::milliseconds ms(double seconds) { return std::chrono::milliseconds(static_cast<long>(seconds * 1000)); }

void report(const char* verb, const rs::StreamStats& s, const Options& o) {
    std::printf("%s %llu frames, %llu bytes in %.3f s: %.1f frames/s, %.3f Gb/s, %llu credit waits\n", verb,
                static_cast<unsigned long long>(s.frames), static_cast<unsigned long long>(s.bytes), s.seconds(),
                s.fps(), s.gbps(), static_cast<unsigned long long>(s.credit_waits));
    std::fflush(stdout);
    if (!o.stats_json.empty()) {
        const nlohmann::json j = {{"role", o.role},        {"frames", s.frames},        {"bytes", s.bytes},
                                  {"seconds", s.seconds()}, {"fps", s.fps()},            {"gbps", s.gbps()},
                                  {"credit_waits", s.credit_waits}, {"drops", s.drops}};
        std::ofstream(o.stats_json) << j.dump(2) << '\n';
    }
}

// The connection objects belong to main (rx, tx): an error is printed there
// before they are torn down, since teardown may wait on the kernel's CM.
int run_receiver(const Options& o, std::unique_ptr<rs::FrameReceiver>& rx) {
    rs::RingConfig ring;
    ring.slots = o.slots;
    ring.slot_size = o.slot_size;
    ring.poll_mode = poll_mode(o);
    ring.device = o.device;
    ring.live = o.policy == "live";
    ring.key = key(o);
    ring.memory_windows = o.memory_windows;
    // --serve-next: the listener outlives the first sender.
    std::optional<rs::Listener> kept;
    auto join = [&] {
        if (o.reverse) {
            rx = rs::FrameReceiver::connect(rs::Endpoint{o.addr, o.port}, ring, ms(o.connect_timeout));
        } else {
            std::optional<rs::Listener> own;
            std::optional<rs::Listener>& at = o.serve_next ? kept : own;
            if (!at) {
                at.emplace(rs::Endpoint{o.addr, o.port});
                std::printf("receiver: listening on %s:%u, %u slots of %u bytes\n", o.addr.c_str(), at->port(),
                            o.slots, o.slot_size);
                std::fflush(stdout);
            }
            rx = rs::FrameReceiver::accept(*at, ring, ms(o.connect_timeout));
        }
        std::printf("receiver: sender connected%s, %s\n", rx->huge_pages() ? " (ring on huge pages)" : "",
                    rx->memory_windows() ? "a memory window per slot" : "no memory windows");
        std::fflush(stdout);
    };
    join();

    const std::uint32_t max_payload =
        o.max_payload ? o.max_payload : o.slot_size - static_cast<std::uint32_t>(wire::kSlotHeaderSize);
    rs::SenderCredits model(o.slots); // which slot the sender must pick next
    std::vector<wire::SlotImm> held;  // frames the "consumer" still holds
    std::uint64_t received = 0, gaps = 0;
    std::optional<std::uint64_t> last;
    unsigned format_changes = 0;
    std::uint32_t slot_size = rx->ring().slot_size;
    bool rejoined = false;
    // --hold-first: frame 0, which the consumer keeps, and its checksum.
    struct Held {
        rs::ReceivedFrame frame;
        std::uint64_t sum = 0;
    };
    std::unique_ptr<Held> first; // (not an optional: GCC 12 warns it may be used uninitialized)
    bool hold_first = o.hold_first, refused_one = false;
    // A refusal while the consumer holds frame 0 says whether its bytes
    // changed: with memory windows the NIC refuses a write into it.
    const auto check_first = [&](const char* why) {
        if (!first) return;
        const bool same = checksum(first->frame.payload) == first->sum && first->frame.payload.size() > 0;
        std::printf("receiver: the frame the consumer held (frame %llu, slot %u) is %s after: %s\n",
                    static_cast<unsigned long long>(first->frame.header.sequence), first->frame.slot,
                    same ? "intact (checksum unchanged)" : "CHANGED (checksum differs, a write landed in it)", why);
        std::fflush(stdout);
    };
    for (;;) {
    std::optional<rs::ReceivedFrame> f;
    try {
        f = rx->next(ms(o.idle_timeout));
    } catch (const std::exception& e) {
        check_first(e.what());
        if (!o.serve_next || refused_one) throw;
        // The refused sender's connection goes (its ring with it); the
        // listener serves the next one, a stream of its own.
        std::printf("receiver: refused the first sender (%s); serving the next\n", e.what());
        std::fflush(stdout);
        refused_one = true;
        first.reset();
        held.clear();
        rx.reset();
        join();
        model = rs::SenderCredits(o.slots);
        last.reset();
        received = gaps = 0;
        hold_first = false;
        continue;
    }
    if (!f) {
        if (first) rx->release(first->frame.slot);
        break;
    }
    {
        const std::uint64_t seq = f->header.sequence;
        if (f->format_changed) {
            ++format_changes;
            std::printf("receiver: frame %llu starts format %u: %s, frames up to %u bytes\n",
                        static_cast<unsigned long long>(seq), f->format->id, f->format->caps.c_str(),
                        f->format->max_frame_size);
            if (rx->ring().slot_size != slot_size) {
                slot_size = rx->ring().slot_size;
                model = rs::SenderCredits(o.slots); // a new ring starts afresh
                std::printf("receiver: ring grew to %u-byte slots\n", slot_size);
            }
            std::fflush(stdout);
        }
        const auto expected = model.take();
        if (!expected || f->slot != expected->slot) {
            throw rs::ProtocolError(fmt::format("frame {} arrived in slot {}, the sender's credits say slot {}", seq,
                                                f->slot, expected ? int{expected->slot} : -1));
        }
        if (!last && o.late_join && seq == 0) {
            // A join that found the stream not yet started proves nothing.
            throw rs::ProtocolError("--late-join: the first frame was frame 0: this receiver did not join late");
        }
        const std::uint64_t want_seq = last ? *last + 1 : (o.late_join ? seq : 0);
        const bool back_from_away = std::exchange(rejoined, false) && seq > want_seq;
        if (seq != want_seq && !back_from_away && !(o.allow_drops && seq > want_seq && seq < o.frames)) {
            throw rs::ProtocolError(fmt::format("slot {} holds frame {}, expected frame {}", f->slot, seq, want_seq));
        }
        gaps += back_from_away ? 0 : seq - want_seq;
        last = seq;
        const std::uint32_t want =
            check::frame_size(seq, o.min_payload, f->format ? f->format->max_frame_size : max_payload);
        if (f->payload.size() != want) {
            throw rs::ProtocolError(fmt::format("frame {}: {} payload bytes, expected {}", seq, f->payload.size(), want));
        }
        if (const std::size_t at = check::first_mismatch(f->payload, seq); at != f->payload.size()) {
            throw rs::ProtocolError(fmt::format("frame {} (slot {}): payload differs from what was sent at byte {} "
                                                "of {}",
                                                seq, f->slot, at, f->payload.size()));
        }
        ++received;
        if (o.consume_delay_ms > 0) { // a slow consumer
            std::this_thread::sleep_for(std::chrono::milliseconds(o.consume_delay_ms));
        }
        if (hold_first && seq == 0) {
            first = std::make_unique<Held>(Held{*f, checksum(f->payload)});
            continue; // released at the end of the stream
        }
        held.push_back(*expected);
        if (held.size() == o.release_batch || seq + 1 == o.frames) {
            for (auto it = held.rbegin(); it != held.rend(); ++it) { // newest first: out of order
                rx->release(it->slot);
                model.give_back(wire::SlotImm{it->slot, static_cast<std::uint16_t>(it->generation + 1)});
            }
            held.clear();
        }
        if (o.rejoin_after > 0 && received == o.rejoin_after) { // leave, and come back to the running stream
            for (const auto& h : held) rx->release(h.slot);
            held.clear();
            rx.reset();
            std::printf("receiver: left after %llu frames, rejoining\n", static_cast<unsigned long long>(received));
            std::fflush(stdout);
            join();
            model = rs::SenderCredits(o.slots); // a new connection starts afresh
            rejoined = true;
        }
    }
    }
    if (!last || *last + 1 != o.frames) {
        throw std::runtime_error(fmt::format("the stream ended at frame {}, expected {} frames",
                                             last ? static_cast<std::int64_t>(*last) : -1, o.frames));
    }
    report("receiver: received and verified", rx->stats(), o);
    std::printf("receiver: %llu frames missing (dropped by the sender), %u format changes\n",
                static_cast<unsigned long long>(gaps), format_changes);
    if (o.expect_drops && gaps == 0) {
        std::fprintf(stderr, "receiver: expected the live policy to drop frames for this slow receiver, none missing\n");
        return 1;
    }
    if (o.expect_format_changes >= 0 && format_changes != static_cast<unsigned>(o.expect_format_changes)) {
        std::fprintf(stderr, "receiver: expected %d format changes, saw %u\n", o.expect_format_changes,
                     format_changes);
        return 1;
    }
    return 0;
}

// Frame buffers come from a registered pool and go back to it (busy[b] =
// false) when the transport says the frame was delivered or dropped.
rs::SenderOptions sender_options(const Options& o, std::vector<bool>& busy) {
    rs::SenderOptions so;
    so.policy = o.policy == "live" ? rs::Policy::kLive : rs::Policy::kLossless;
    so.poll_mode = poll_mode(o);
    so.device = o.device;
    so.key = key(o);
    so.on_done = [&busy](std::uint64_t buffer, rs::FrameFate) { busy[buffer] = false; };
    return so;
}

// One stream to --receivers receivers (they dial in), paced by --fps.
int run_fanout_sender(const Options& o) {
    std::vector<bool> busy;
    const rs::SenderOptions so = sender_options(o, busy);
    rs::Listener listener(rs::Endpoint{o.addr, o.port});
    rs::FanoutSender tx(listener, so, [](const std::string& m) {
        std::printf("sender: %s\n", m.c_str());
        std::fflush(stdout);
    });
    tx.set_member_timeout(ms(o.member_timeout));
    std::printf("sender: listening on %s:%u for %u receivers\n", o.addr.c_str(), listener.port(), o.receivers);
    std::fflush(stdout);
    tx.wait_for_receivers(o.receivers, ms(o.connect_timeout));
    const std::uint32_t max_payload = o.max_payload ? o.max_payload : tx.max_payload();
    const std::uint32_t pool = rs::FrameSender::kMaxSlots + 1;
    busy.assign(pool, false);
    // Frame memory as a Sender's: a domain on the fan-out's PD (its device 0).
    const auto domain = std::make_shared<rs::MemoryDomain::Impl>(
        [pd = tx.shared_pd()](std::span<std::byte> pages, std::size_t locked) {
            return rs::register_pages(pd, pages, locked, 0);
        });
    const std::unique_ptr<rs::FrameMemory::Impl> memory = domain->allocate(domain, std::size_t{pool} * max_payload);
    const auto start = std::chrono::steady_clock::now();
    for (std::uint64_t seq = 0; seq < o.frames; ++seq) {
        if (o.fps > 0) { // a live source: frames come at their rate, whatever the receivers do
            std::this_thread::sleep_until(start + std::chrono::duration<double>(static_cast<double>(seq) / o.fps));
        }
        const std::uint32_t b = static_cast<std::uint32_t>(seq % pool);
        while (busy[b]) {
            tx.progress();
        }
        const auto buf = memory->pages.bytes().subspan(std::size_t{b} * max_payload,
                                                       check::frame_size(seq, o.min_payload, max_payload));
        check::fill(buf, seq);
        busy[b] = true;
        tx.send(buf, *memory, rs::FrameMeta{static_cast<std::int64_t>(seq), 1, 0, {}}, b, ms(o.idle_timeout));
    }
    tx.finish(ms(o.idle_timeout));
    for (const auto& r : tx.receiver_stats()) {
        std::printf("sender: to %s (%s): %llu frames, %llu dropped, %llu credit waits\n", r.peer.c_str(),
                    r.policy == rs::Policy::kLive ? "live" : "lossless", static_cast<unsigned long long>(r.stats.frames),
                    static_cast<unsigned long long>(r.stats.drops),
                    static_cast<unsigned long long>(r.stats.credit_waits));
    }
    report("sender: offered", tx.stats(), o);
    return 0;
}

int run_sender(const Options& o, std::vector<bool>& busy, std::unique_ptr<rs::FrameSender>& tx) {
    if (o.receivers > 0) {
        return run_fanout_sender(o);
    }
    const rs::SenderOptions so = sender_options(o, busy);
    if (o.reverse) {
        rs::Listener listener(rs::Endpoint{o.addr, o.port});
        std::printf("sender: listening on %s:%u\n", o.addr.c_str(), listener.port());
        std::fflush(stdout);
        tx = rs::FrameSender::accept(listener, so, ms(o.connect_timeout));
    } else {
        tx = rs::FrameSender::connect(rs::Endpoint{o.addr, o.port}, so, ms(o.connect_timeout));
    }
    std::uint32_t max_payload = o.max_payload ? o.max_payload : tx->max_payload();
    if (o.min_payload > max_payload) {
        throw rs::UserError(fmt::format("--min-payload {} exceeds the largest frame {}", o.min_payload, max_payload));
    }
    const std::uint32_t largest = std::max(max_payload, o.grow_to);
    auto announce = [&](std::uint16_t id, std::uint32_t max) {
        wire::StreamFormat f;
        f.id = id;
        f.max_frame_size = max;
        f.caps = fmt::format("application/x-rdma-ring-check,max-payload={}", max);
        tx->set_format(f, ms(o.idle_timeout));
    };
    if (o.grow_to > 0) {
        announce(1, max_payload);
    }
    std::printf("sender: connected, receiver offers %u slots of %u bytes, %s policy\n", tx->ring().slot_count,
                tx->ring().slot_size, o.policy.c_str());
    std::fflush(stdout);
    // One buffer per slot, plus one for the frame a live sender keeps pending.
    const std::uint32_t pool = tx->ring().slot_count + 1;
    busy.assign(pool, false);
    std::vector<std::uint64_t> number_in(pool, 0);
    rs::RegisteredRegion buffers(tx->pd(), std::size_t{pool} * largest, 0);
    for (std::uint64_t seq = 0; seq < o.frames; ++seq) {
        if (o.grow_to > 0 && seq == o.frames / 2) { // mid-stream: frames outgrow the slots
            max_payload = o.grow_to;
            announce(2, max_payload);
            std::printf("sender: format 2 from frame %llu, frames up to %u bytes; slots now %u bytes\n",
                        static_cast<unsigned long long>(seq), max_payload, tx->ring().slot_size);
            std::fflush(stdout);
        }
        const std::uint32_t b = static_cast<std::uint32_t>(seq % pool);
        if (busy[b]) {
            tx->wait_done(number_in[b], ms(o.idle_timeout));
        }
        const auto buf = buffers.bytes().subspan(std::size_t{b} * largest,
                                                 check::frame_size(seq, o.min_payload, max_payload));
        check::fill(buf, seq);
        busy[b] = true;
        number_in[b] = tx->send(buf, buffers.lkey(), rs::FrameMeta{static_cast<std::int64_t>(seq), 1, 0, {}}, b,
                                ms(o.idle_timeout)).value(); // no waker: never interrupted
    }
    tx->finish(ms(o.idle_timeout));
    const rs::StreamStats& st = tx->stats();
    report("sender: sent", st, o);
    std::printf("sender: %llu dropped, latency post->delivered mean %.1f us, max %.1f us\n",
                static_cast<unsigned long long>(st.drops), st.latency_mean_us(), st.latency_max_us());
    if (o.expect_drops && st.drops == 0) {
        std::fprintf(stderr, "sender: expected the live policy to drop frames for a slow receiver, none dropped\n");
        return 1;
    }
    if (o.expect_credit_waits && (st.credit_waits == 0 || st.drops != 0)) {
        std::fprintf(stderr, "sender: expected to wait for credits without dropping (waits %llu, drops %llu)\n",
                     static_cast<unsigned long long>(st.credit_waits), static_cast<unsigned long long>(st.drops));
        return 1;
    }
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    Options o;
    CLI::App app{"rdma-ring-check: stream checked frames through an RDMA slot ring (WRITE_WITH_IMM) and verify "
                 "every byte, slot and immediate on arrival.\nRun a receiver, then a sender pointing at it."};
    app.add_option("--role", o.role,
                   "receiver (listens), sender (connects), rogue-sender (connects, breaks --fault), rogue-receiver "
                   "(listens, breaks --fault)")
        ->required()
        ->check(CLI::IsMember({"receiver", "sender", "rogue-sender", "rogue-receiver"}));
    app.add_option("--addr", o.addr, "receiver: address to listen on (empty: all); sender: receiver's address");
    app.add_option("--port", o.port, "rdma_cm port")->capture_default_str();
    // Up to the wire's limit, past what a sender takes: a test provokes the
    // sender's refusal with it.
    app.add_option("--slots", o.slots, "ring slots (receiver)")
        ->check(CLI::Range(1u, wire::kMaxSlots))
        ->capture_default_str();
    app.add_option("--slot-size", o.slot_size, "bytes per slot, 64-byte header included (receiver)")
        ->check(CLI::Range(static_cast<std::uint32_t>(wire::kSlotHeaderSize + 1), 1u << 30))
        ->capture_default_str();
    app.add_option("--frames", o.frames, "frames to stream")->check(CLI::PositiveNumber)->capture_default_str();
    app.add_option("--min-payload", o.min_payload, "smallest frame payload in bytes")->capture_default_str();
    app.add_option("--max-payload", o.max_payload, "largest frame payload in bytes (0: fill the slot)")
        ->capture_default_str();
    app.add_option("--release-batch", o.release_batch,
                   "receiver: hold this many frames, then release them newest first (out-of-order credits)")
        ->check(CLI::Range(1u, rs::FrameSender::kMaxSlots))
        ->capture_default_str();
    app.add_option("--fault", o.fault,
                   "rogue-sender: how to break frame 1; rogue-receiver: what to send the sender (see "
                   "tests/rdma/rogue_receiver.hpp)")
        ->check(CLI::IsMember({"wrong-rkey", "wrong-imm", "stale-generation", "corrupt-payload", "bad-hello",
                               "early-credits", "never-given", "ring-advert", "no-imm", "oversized", "hostile-layout",
                               "short-frame", "huge-frame", "held-slot", "side-data-overrun",
                               "audio-ragged"}));
    app.add_option("--connect-timeout", o.connect_timeout, "seconds to wait for the peer")->capture_default_str();
    app.add_option("--idle-timeout", o.idle_timeout, "seconds without progress before giving up")
        ->capture_default_str();
    app.add_option("--stats-json", o.stats_json, "write final stats as JSON to this file");
    app.add_option("--policy", o.policy,
                   "lossless (the sender waits for a free slot) or live (it drops instead); either end may ask "
                   "for live")
        ->check(CLI::IsMember({"lossless", "live"}))
        ->capture_default_str();
    app.add_flag("--allow-drops", o.allow_drops, "receiver: frames may be missing (a live sender), not reordered");
    app.add_option("--consume-delay-ms", o.consume_delay_ms, "receiver: hold each frame this long (a slow consumer)");
    app.add_flag("--expect-drops", o.expect_drops, "fail unless the live policy dropped frames (frames missing)");
    app.add_flag("--expect-credit-waits", o.expect_credit_waits,
                 "sender: fail unless it had to wait for credits, and dropped nothing");
    app.add_option("--grow-to", o.grow_to,
                   "sender: announce a format, and halfway through a second one whose frames reach this many "
                   "bytes (the receiver grows its ring)");
    app.add_option("--expect-format-changes", o.expect_format_changes,
                   "receiver: fail unless exactly this many format changes arrive");
    app.add_option("--poll", o.poll, "completion handling: event (sleep until work, low CPU) or busy (spin, lowest "
                                     "latency)")
        ->check(CLI::IsMember({"event", "busy"}))
        ->capture_default_str();
    app.add_option("-d,--device", o.device, "RDMA device to use (default: the one the route picks)");
    app.add_option("--key-file", o.key_file, "authenticate with the pre-shared key in FILE (both ends)");
    app.add_option("--receivers", o.receivers,
                   "sender: listen on --addr and stream to this many receivers at once (fan-out); more may join")
        ->check(CLI::Range(1u, 64u));
    app.add_option("--member-timeout", o.member_timeout,
                   "sender (fan-out): seconds one receiver may hold the others back before it is cut")
        ->capture_default_str();
    app.add_option("--fps", o.fps, "sender (fan-out): pace frames at this rate, as a live source would");
    app.add_option("--rejoin-after", o.rejoin_after,
                   "receiver: after this many frames, disconnect and connect again (the stream goes on)");
    app.add_flag("--memory-windows,!--no-memory-windows", o.memory_windows,
                 "receiver: a memory window per slot (default: the ring as one REMOTE_WRITE region)");
    app.add_flag("--hold-first", o.hold_first,
                 "receiver: hold frame 0 to the end (release the others as usual); after a refusal, say whether "
                 "its bytes changed");
    app.add_flag("--serve-next", o.serve_next,
                 "receiver (listening): when the first sender is refused, serve the next one on the same listener; "
                 "the run's verdict is that stream's");
    app.add_flag("--late-join", o.late_join, "receiver: the stream must already be running (its first frame > 0)");
    app.add_flag("--reverse", o.reverse,
                 "the sender listens on --addr and the receiver connects to it (default: the other way round)");
    CLI11_PARSE(app, argc, argv);
    if (o.receivers > 0) {
        o.reverse = true; // a fan-out sender listens
    }
    const bool listens = o.role == "receiver" || o.role == "rogue-receiver";
    if (listens == o.reverse && o.addr.empty()) {
        std::fprintf(stderr, "rdma-ring-check: the connecting side needs --addr (the listener's address)\n");
        return 2;
    }
    if (o.role == "receiver" && o.release_batch > o.slots) {
        std::fprintf(stderr, "rdma-ring-check: --release-batch %u exceeds --slots %u: the sender would stall\n",
                     o.release_batch, o.slots);
        return 2;
    }
    std::vector<bool> busy; // outlives tx: its on_done writes here
    std::unique_ptr<rs::FrameSender> tx;
    std::unique_ptr<rs::FrameReceiver> rx;
    try {
        if (o.role == "receiver") return run_receiver(o, rx);
        if (o.role == "sender") return run_sender(o, busy, tx);
        if (o.role == "rogue-receiver") {
            return check::run_rogue_receiver(rs::Endpoint{o.addr, o.port}, o.fault, o.slots, o.slot_size,
                                             ms(o.connect_timeout), ms(o.idle_timeout));
        }
        return check::run_rogue_sender(rs::Endpoint{o.addr, o.port}, o.fault, o.frames, ms(o.connect_timeout),
                                       ms(o.idle_timeout));
    } catch (const rs::UserError& e) {
        std::fprintf(stderr, "rdma-ring-check %s: %s\n", o.role.c_str(), e.what());
        return 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "rdma-ring-check %s: error: %s\n", o.role.c_str(), e.what());
        return 1;
    }
}
